package strait.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/**
 * The Java client over TLS and SASL, against the secured broker that secure.sh
 * starts (compat-tests/lib/broker.sh start_secure_broker): SASL_SSL with
 * SCRAM-SHA-512 and SSL with a client certificate (mTLS), each with an admin
 * client, a producer and a consumer group; a wrong password is
 * SaslAuthenticationException. Its settings come as -Dsecure.* properties
 * (secure.sh sets them); the normal run (run.sh) excludes this class.
 */
class SecureTest {
    static final int RECORDS = 1000;

    static String need(String key) {
        String v = System.getProperty(key, "");
        if (v.isEmpty() || v.startsWith("${")) {
            fail(key + " is not set: run SecureTest with compat-tests/java/secure.sh");
        }
        return v;
    }

    static Properties scram(String user, String password) {
        Properties p = new Properties();
        p.put("bootstrap.servers", need("secure.sasl.ssl"));
        p.put("security.protocol", "SASL_SSL");
        p.put("ssl.truststore.location", need("secure.certs") + "/truststore.p12");
        p.put("ssl.truststore.type", "PKCS12");
        p.put("ssl.truststore.password", need("secure.password"));
        p.put("sasl.mechanism", "SCRAM-SHA-512");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                + user + "\" password=\"" + password + "\";");
        return p;
    }

    static Properties mtls() {
        Properties p = new Properties();
        p.put("bootstrap.servers", need("secure.ssl"));
        p.put("security.protocol", "SSL");
        p.put("ssl.truststore.location", need("secure.certs") + "/truststore.jks");
        p.put("ssl.truststore.type", "JKS");
        p.put("ssl.truststore.password", need("secure.password"));
        p.put("ssl.keystore.location", need("secure.certs") + "/client.p12");
        p.put("ssl.keystore.type", "PKCS12");
        p.put("ssl.keystore.password", need("secure.password"));
        p.put("ssl.key.password", need("secure.password"));
        return p;
    }

    static void roundTrip(Properties conn, String topic) throws Exception {
        try (Admin admin = Admin.create(conn)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get(30, TimeUnit.SECONDS);
            assertTrue(admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(topic));
            assertEquals(1, admin.describeCluster().nodes().get(30, TimeUnit.SECONDS).size());
        }
        Properties pp = new Properties();
        pp.putAll(conn);
        pp.put("acks", "all");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < RECORDS; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, "v" + i));
            }
            producer.flush();
        }
        Properties cp = new Properties();
        cp.putAll(conn);
        cp.put("group.id", "g-" + topic);
        cp.put("auto.offset.reset", "earliest");
        Map<String, String> got = new HashMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            Instant deadline = Instant.now().plusSeconds(60);
            while (got.size() < RECORDS && Instant.now().isBefore(deadline)) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    got.put(r.key(), r.value());
                }
            }
            consumer.commitSync();
        }
        assertEquals(RECORDS, got.size());
        for (int i = 0; i < RECORDS; i++) {
            assertEquals("v" + i, got.get("k" + i));
        }
    }

    @Test
    void saslSslScramSha512AdminProduceConsumeGroup() throws Exception {
        roundTrip(scram("alice", "alice-secret"), Broker.topic("java-sasl-ssl-scram"));
    }

    @Test
    void sslClientCertificateMtlsAdminProduceConsumeGroup() throws Exception {
        roundTrip(mtls(), Broker.topic("java-mtls"));
    }

    @Test
    void saslSslScramSha512WrongPasswordAuthenticationFailure() {
        Properties p = scram("alice", "wrong-password");
        p.put("default.api.timeout.ms", "15000");
        p.put("request.timeout.ms", "10000");
        try (Admin admin = Admin.create(p)) {
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> admin.describeCluster().nodes().get(30, TimeUnit.SECONDS));
            assertInstanceOf(SaslAuthenticationException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("Authentication failed during authentication due to invalid credentials"),
                    e.getCause().getMessage());
        }
    }
}
