package strait.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/**
 * Share groups (KIP-932) through Kafka's KafkaShareConsumer: implicit and explicit acknowledgement,
 * redelivery of released and timed-out records with their delivery count, archiving of rejected
 * records and of records past the delivery limit, and three consumers sharing one partition.
 */
class ShareConsumerTest {
    private static final long DEADLINE_MS = 60_000;

    /** Creates a one-partition topic, sets the group's configs and produces n records v0..v(n-1). */
    private static String setup(String prefix, String group, int n, Map<String, String> groupConfigs)
            throws Exception {
        String topic = Broker.topic(prefix);
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            Map<String, String> cfg = new HashMap<>(groupConfigs);
            cfg.put("share.auto.offset.reset", "earliest");
            List<AlterConfigOp> ops = new ArrayList<>();
            cfg.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops))
                    .all().get();
        }
        produce(topic, 0, n);
        return topic;
    }

    private static void produce(String topic, int from, int to) throws Exception {
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(Broker.props(), new StringSerializer(), new StringSerializer())) {
            for (int i = from; i < to; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i));
            }
            producer.flush();
        }
    }

    private static KafkaShareConsumer<String, String> consumer(String group, String mode, int maxPollRecords) {
        Properties p = Broker.props();
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", mode);
        p.put("max.poll.records", Integer.toString(maxPollRecords));
        return new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    /** The group's share-partition start offset of partition 0 of topic (every offset below is done). */
    private static long startOffset(String group, String topic) throws Exception {
        try (Admin admin = Admin.create(Broker.props())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            Map<TopicPartition, SharePartitionOffsetInfo> m = admin.listShareGroupOffsets(
                    Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(List.of(tp))))
                    .partitionsToOffsetInfo(group).get();
            SharePartitionOffsetInfo o = m.get(tp);
            return o == null ? -1 : o.startOffset();
        }
    }

    private static void assertCommitted(Map<TopicIdPartition, Optional<KafkaException>> result) {
        result.forEach((tp, e) -> assertTrue(e.isEmpty(), "acknowledgement of " + tp + " failed: " + e));
    }

    @Test
    void implicitAcknowledgement() throws Exception {
        String group = Broker.topic("share-implicit");
        String topic = setup("java-share-implicit", group, 100, Map.of());
        Set<String> seen = new HashSet<>();
        try (KafkaShareConsumer<String, String> c = consumer(group, "implicit", 500)) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (seen.size() < 100 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    assertTrue(seen.add(r.value()), "record delivered twice: " + r.value());
                    assertEquals(Optional.of((short) 1), r.deliveryCount());
                }
            }
            assertEquals(100, seen.size(), "records consumed");
            // The records of the last poll are accepted by commitSync (implicit mode).
            assertCommitted(c.commitSync());
        }
        assertEquals(100, startOffset(group, topic), "every record accepted: the start offset is past them");
    }

    @Test
    void explicitAcceptReleaseAndReject() throws Exception {
        String group = Broker.topic("share-explicit");
        String topic = setup("java-share-explicit", group, 10, Map.of());
        Map<String, Short> counts = new HashMap<>();
        boolean released = false;
        try (KafkaShareConsumer<String, String> c = consumer(group, "explicit", 500)) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            // v3 is released once (delivered again with count 2, then accepted), v6 rejected
            // (never delivered again), the rest accepted.
            while (!(counts.size() == 10 && counts.get("v3") == 2) && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    short n = r.deliveryCount().orElseThrow();
                    Short before = counts.put(r.value(), n);
                    if (r.value().equals("v3") && !released) {
                        assertEquals(1, n, "v3's first delivery");
                        c.acknowledge(r, AcknowledgeType.RELEASE);
                        released = true;
                    } else if (r.value().equals("v6")) {
                        assertEquals(null, before, "v6 was rejected, yet delivered again");
                        c.acknowledge(r, AcknowledgeType.REJECT);
                    } else {
                        assertTrue(before == null || r.value().equals("v3"), "delivered again: " + r.value());
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                }
                assertCommitted(c.commitSync());
            }
            assertEquals(10, counts.size(), "records delivered: " + counts.keySet());
            assertEquals((short) 2, counts.get("v3"), "the released record's delivery count");
        }
        assertEquals(10, startOffset(group, topic), "accepted and rejected: the start offset is past them");
        // Nothing before offset 10 is delivered again: the next record is the first one a new
        // consumer gets.
        produce(topic, 10, 11);
        try (KafkaShareConsumer<String, String> c = consumer(group, "explicit", 500)) {
            c.subscribe(List.of(topic));
            List<String> got = pollUntil(c, "v10");
            assertEquals(List.of("v10"), got, "records after the rejection");
        }
    }

    /** Polls (accepting everything) until a record of value last arrives; returns the values seen. */
    private static List<String> pollUntil(KafkaShareConsumer<String, String> c, String last) {
        List<String> got = new ArrayList<>();
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        while (!got.contains(last) && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                got.add(r.value());
                c.acknowledge(r, AcknowledgeType.ACCEPT);
            }
            assertCommitted(c.commitSync());
        }
        return got;
    }

    @Test
    void lockTimeoutRedelivers() throws Exception {
        String group = Broker.topic("share-lock");
        // 15 s is the smallest lock duration a group may set (group.share.min.record.lock.duration.ms).
        String topic = setup("java-share-lock", group, 5, Map.of("share.record.lock.duration.ms", "15000"));
        try (KafkaShareConsumer<String, String> a = consumer(group, "explicit", 500);
                KafkaShareConsumer<String, String> b = consumer(group, "explicit", 500)) {
            a.subscribe(List.of(topic));
            Set<String> held = new HashSet<>();
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            // One poll that returns records (explicit mode: a must acknowledge them before
            // polling again, and never does).
            while (held.isEmpty() && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : a.poll(Duration.ofMillis(500))) {
                    held.add(r.value());
                }
            }
            assertFalse(held.isEmpty(), "no record acquired by the first consumer");
            // Once their locks expire, b gets a's records again (delivery count 2), and the
            // others for the first time.
            b.subscribe(List.of(topic));
            Map<String, Short> again = new HashMap<>();
            while (again.size() < 5 && System.currentTimeMillis() < deadline + DEADLINE_MS) {
                for (ConsumerRecord<String, String> r : b.poll(Duration.ofMillis(500))) {
                    again.put(r.value(), r.deliveryCount().orElseThrow());
                    b.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                assertCommitted(b.commitSync());
            }
            assertEquals(5, again.size(), "records delivered to the second consumer: " + again.keySet());
            again.forEach((v, n) -> assertEquals(held.contains(v) ? (short) 2 : (short) 1, n,
                    "delivery count of " + v + " (a held " + held + ")"));
        }
        assertEquals(5, startOffset(group, topic));
    }

    @Test
    void deliveryLimitArchives() throws Exception {
        String group = Broker.topic("share-limit");
        String topic = setup("java-share-limit", group, 3, Map.of("share.delivery.count.limit", "2"));
        try (KafkaShareConsumer<String, String> c = consumer(group, "explicit", 500)) {
            c.subscribe(List.of(topic));
            // Every record is released at each delivery: after the second it is archived.
            Map<String, Short> last = new HashMap<>();
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (!(last.size() == 3 && last.values().stream().allMatch(n -> n == 2))
                    && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    short n = r.deliveryCount().orElseThrow();
                    assertTrue(n <= 2, r.value() + " delivered " + n + " times, past the limit of 2");
                    last.put(r.value(), n);
                    c.acknowledge(r, AcknowledgeType.RELEASE);
                }
                assertCommitted(c.commitSync());
            }
            assertEquals(Map.of("v0", (short) 2, "v1", (short) 2, "v2", (short) 2), last);
            produce(topic, 3, 4);
            List<String> got = pollUntil(c, "v3");
            assertEquals(List.of("v3"), got, "records after the delivery limit was reached");
        }
        assertEquals(4, startOffset(group, topic));
    }

    @Test
    void threeConsumersShareOnePartition() throws Exception {
        String group = Broker.topic("share-three");
        int total = 300;
        String topic = setup("java-share-three", group, total, Map.of());
        List<KafkaShareConsumer<String, String>> cs = new ArrayList<>();
        Map<String, Integer> owner = new HashMap<>();
        int[] per = new int[3];
        try {
            for (int i = 0; i < 3; i++) {
                KafkaShareConsumer<String, String> c = consumer(group, "implicit", 10);
                c.subscribe(List.of(topic));
                cs.add(c);
            }
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (owner.size() < total && System.currentTimeMillis() < deadline) {
                for (int i = 0; i < 3; i++) {
                    for (ConsumerRecord<String, String> r : cs.get(i).poll(Duration.ofMillis(200))) {
                        Integer prev = owner.put(r.value(), i);
                        assertEquals(null, prev, r.value() + " delivered to consumers " + prev + " and " + i);
                        per[i]++;
                    }
                }
            }
            for (KafkaShareConsumer<String, String> c : cs) {
                assertCommitted(c.commitSync());
            }
        } finally {
            for (KafkaShareConsumer<String, String> c : cs) {
                c.close();
            }
        }
        assertEquals(total, owner.size(), "records consumed by the three consumers");
        for (int i = 0; i < total; i++) {
            assertTrue(owner.containsKey("v" + i), "v" + i + " never delivered");
        }
        System.out.println("share consumers: records per consumer " + List.of(per[0], per[1], per[2]));
        assertEquals(total, startOffset(group, topic));
    }
}
