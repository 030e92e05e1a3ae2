package strait.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * Fetching from the closest replica (KIP-392) with the Java consumer's
 * client.rack, against run.sh's three brokers 1, 2, 3 in racks rack-a, rack-b,
 * rack-c with replica.selector.class=RackAwareReplicaSelector
 * (-Drack.bootstrap.servers). A consumer in rack-b reads partitions led by
 * brokers 1 and 3 from broker 2: its bytes come from node 2, and the leaders
 * send it only small answers (metadata, offsets, the preferred read replica).
 */
class RackTest {
    private static final String RACK_BOOTSTRAP = System.getProperty("rack.bootstrap.servers", "");
    private static final int RECORDS = 300;
    private static final int VALUE_BYTES = 1000;

    @Test
    void consumerFetchesFromItsRack() throws Exception {
        assertFalse(RACK_BOOTSTRAP.isEmpty(), "run.sh passes -Drack.bootstrap.servers (three brokers in three racks)");
        Properties p = new Properties();
        p.put("bootstrap.servers", RACK_BOOTSTRAP);
        String topic = Broker.topic("rack");
        // Each partition on every broker: leaders 1 and 3, never 2.
        Map<Integer, List<Integer>> assignment = Map.of(0, List.of(1, 2, 3), 1, List.of(3, 1, 2));
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic(topic, assignment))).all().get();
            // Every replica in sync before producing.
            for (int i = 0; ; i++) {
                TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                if (d.partitions().size() == 2 && d.partitions().stream().allMatch(tp -> tp.isr().size() == 3)) {
                    break;
                }
                assertTrue(i < 100, "replicas not in sync: " + d);
                Thread.sleep(100);
            }
        }
        Properties pp = new Properties();
        pp.putAll(p);
        pp.put("acks", "all");
        pp.put("key.serializer", ByteArraySerializer.class.getName());
        pp.put("value.serializer", ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
            for (int part = 0; part < 2; part++) {
                for (int i = 0; i < RECORDS; i++) {
                    byte[] v = new byte[VALUE_BYTES];
                    v[0] = (byte) part;
                    v[1] = (byte) (i >> 8);
                    v[2] = (byte) i;
                    producer.send(new ProducerRecord<>(topic, part, null, v));
                }
            }
            producer.flush();
        }

        Properties cp = new Properties();
        cp.putAll(p);
        cp.put("client.rack", "rack-b");
        cp.put("key.deserializer", ByteArrayDeserializer.class.getName());
        cp.put("value.deserializer", ByteArrayDeserializer.class.getName());
        Map<Integer, Integer> next = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int part = 0; part < 2; part++) {
                tps.add(new TopicPartition(topic, part));
                next.put(part, 0);
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            int got = 0;
            while (got < 2 * RECORDS) {
                assertTrue(System.nanoTime() < deadline, "consumed " + got + " of " + 2 * RECORDS + " records in 60 s");
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    int want = next.get(r.partition());
                    int seq = ((r.value()[1] & 0xff) << 8) | (r.value()[2] & 0xff);
                    assertEquals(want, seq, "partition " + r.partition() + " out of order");
                    assertEquals(r.partition(), r.value()[0]);
                    next.put(r.partition(), want + 1);
                    got++;
                }
            }
            Map<String, Double> bytesIn = new HashMap<>();
            for (Map.Entry<MetricName, ? extends Metric> e : consumer.metrics().entrySet()) {
                MetricName n = e.getKey();
                if (n.group().equals("consumer-node-metrics") && n.name().equals("incoming-byte-total")) {
                    bytesIn.put(n.tags().get("node-id"), (Double) e.getValue().metricValue());
                }
            }
            double records = 2.0 * RECORDS * VALUE_BYTES;
            double fromFollower = bytesIn.getOrDefault("node-2", 0.0);
            assertTrue(fromFollower >= records, "bytes from broker 2 (rack-b) " + fromFollower + " < the records' " + records + ": " + bytesIn);
            for (String leader : List.of("node-1", "node-3")) {
                double b = bytesIn.getOrDefault(leader, 0.0);
                assertTrue(b < records / 10, "bytes from " + leader + ", a leader in another rack: " + b + ": " + bytesIn);
            }
        }
    }
}
