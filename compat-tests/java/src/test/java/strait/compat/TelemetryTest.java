package strait.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigOp.OpType;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/**
 * Client telemetry (KIP-714): a CLIENT_METRICS subscription set through the
 * AdminClient, then a producer with enable.metrics.push (the default) whose
 * pushed metrics appear on the broker's /metrics (-Dhttp.address).
 */
class TelemetryTest {
    private static final String HTTP = System.getProperty("http.address", "");

    @Test
    void producerMetricsReachPrometheusEndpoint() throws Exception {
        assertFalse(HTTP.isEmpty(), "-Dhttp.address (the broker's strait.http.listener) is not set");
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        String clientId = "telemetry-producer-" + suffix;
        String sub = "telemetry-sub-" + suffix;
        String topic = Broker.topic("telemetry");
        ConfigResource res = new ConfigResource(ConfigResource.Type.CLIENT_METRICS, sub);
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            admin.incrementalAlterConfigs(Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("metrics", "org.apache.kafka.producer."), OpType.SET),
                    new AlterConfigOp(new ConfigEntry("interval.ms", "1000"), OpType.SET),
                    new AlterConfigOp(new ConfigEntry("match", "client_id=" + clientId), OpType.SET)))).all().get();
            Config cfg = admin.describeConfigs(List.of(res)).all().get().get(res);
            assertEquals("org.apache.kafka.producer.", cfg.get("metrics").value());
            assertEquals("1000", cfg.get("interval.ms").value());
            assertEquals("client_id=" + clientId, cfg.get("match").value());
        }
        Properties p = Broker.props();
        p.put("client.id", clientId);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        HttpRequest get = HttpRequest.newBuilder(URI.create("http://" + HTTP + "/metrics")).timeout(Duration.ofSeconds(5)).build();
        String want = "kafka_client_org_apache_kafka_producer_record_queue_time_avg{";
        String body = "";
        boolean found = false;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            long deadline = System.nanoTime() + Duration.ofSeconds(40).toNanos();
            for (int i = 0; i < 400 && System.nanoTime() < deadline && !found; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get();
                body = http.send(get, HttpResponse.BodyHandlers.ofString()).body();
                for (String line : body.split("\n")) {
                    if (line.startsWith(want) && line.contains("client_id=\"" + clientId + "\"") && line.contains("client_instance_id=\"")) {
                        found = true;
                        break;
                    }
                }
                if (!found) {
                    Thread.sleep(100);
                }
            }
        }
        assertTrue(found, "no " + want + " series of " + clientId + " on /metrics; client metric lines: "
                + body.lines().filter(l -> l.startsWith("kafka_client_") || l.startsWith("strait_client_telemetry")).limit(20).toList());
    }
}
