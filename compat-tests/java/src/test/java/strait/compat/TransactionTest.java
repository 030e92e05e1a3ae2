package strait.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/** The Java transactional producer: commits and aborts, read_committed consumers, exactly-once copying, admin. */
class TransactionTest {
    private static KafkaProducer<String, String> transactional(String id) {
        Properties p = Broker.props();
        p.put("transactional.id", id);
        KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
        producer.initTransactions();
        return producer;
    }

    private static List<String> readAll(String topic, String isolation, int expected) {
        Properties cp = Broker.props();
        cp.put("isolation.level", isolation);
        cp.put("auto.offset.reset", "earliest");
        List<String> out = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> parts = new ArrayList<>();
            consumer.partitionsFor(topic).forEach(pi -> parts.add(new TopicPartition(topic, pi.partition())));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long deadline = System.currentTimeMillis() + 30_000;
            while (out.size() < expected && System.currentTimeMillis() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(r -> out.add(r.value()));
            }
            consumer.poll(Duration.ofMillis(1000)).forEach(r -> out.add(r.value()));
        }
        out.sort(null);
        return out;
    }

    @Test
    void committedVisibleAbortedNever() throws Exception {
        String topic = Broker.topic("java-txn");
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
        }
        try (KafkaProducer<String, String> producer = transactional("java-txn-" + topic)) {
            for (String outcome : List.of("commit", "abort", "commit")) {
                producer.beginTransaction();
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>(topic, "k" + i, outcome + "-" + i + "-" + System.nanoTime()));
                }
                if (outcome.equals("commit")) {
                    producer.commitTransaction();
                } else {
                    producer.flush(); // the aborted records reach the log, then the marker
                    producer.abortTransaction();
                }
            }
        }
        List<String> committed = readAll(topic, "read_committed", 20);
        assertEquals(20, committed.size(), "read_committed sees the two committed transactions");
        assertTrue(committed.stream().allMatch(v -> v.startsWith("commit-")), "no aborted record is read_committed");
        assertEquals(30, readAll(topic, "read_uncommitted", 30).size(), "read_uncommitted sees everything");
    }

    @Test
    void consumeTransformProduceExactlyOnce() throws Exception {
        String src = Broker.topic("java-eos-src");
        String dst = Broker.topic("java-eos-dst");
        String group = "g-" + src;
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(src, 3, (short) 1), new NewTopic(dst, 3, (short) 1))).all().get();
        }
        try (KafkaProducer<String, String> plain =
                new KafkaProducer<>(Broker.props(), new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 300; i++) {
                plain.send(new ProducerRecord<>(src, "k" + i, "v" + i));
            }
        }
        Properties cp = Broker.props();
        cp.put("group.id", group);
        cp.put("isolation.level", "read_committed");
        cp.put("auto.offset.reset", "earliest");
        cp.put("enable.auto.commit", "false");
        int copied = 0;
        try (KafkaConsumer<String, String> consumer =
                        new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer());
                KafkaProducer<String, String> producer = transactional("java-eos-" + src)) {
            consumer.subscribe(List.of(src));
            long deadline = System.currentTimeMillis() + 60_000;
            while (copied < 300 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> recs = consumer.poll(Duration.ofMillis(500));
                if (recs.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : recs) {
                    producer.send(new ProducerRecord<>(dst, r.key(), r.value().toUpperCase()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
                copied += recs.count();
            }
        }
        assertEquals(300, copied);
        List<String> out = readAll(dst, "read_committed", 300);
        assertEquals(300, out.size(), "every record copied exactly once");
        try (Admin admin = Admin.create(Broker.props())) {
            long total = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                    .values().stream().mapToLong(OffsetAndMetadata::offset).sum();
            assertEquals(300, total, "the transactions committed the group's offsets");
        }
    }

    /** What kafka-transactions.sh describe, describe-producers and abort do. */
    @Test
    void adminDescribesAndAbortsAHangingTransaction() throws Exception {
        String topic = Broker.topic("java-hanging");
        String id = "java-hanging-" + topic;
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        KafkaProducer<String, String> producer = transactional(id);
        producer.beginTransaction();
        producer.send(new ProducerRecord<>(topic, "k", "hanging")).get();
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Admin.create(Broker.props())) {
            TransactionDescription desc = admin.describeTransactions(List.of(id)).description(id).get();
            assertEquals(TransactionState.ONGOING, desc.state());
            assertTrue(desc.topicPartitions().contains(tp));
            assertTrue(admin.listTransactions().all().get().stream().anyMatch(l -> l.transactionalId().equals(id)));

            List<ProducerState> producers = admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers();
            assertEquals(1, producers.size());
            ProducerState ps = producers.get(0);
            assertEquals(0L, ps.currentTransactionStartOffset().orElse(-1L));

            admin.abortTransaction(new AbortTransactionSpec(tp, ps.producerId(), (short) ps.producerEpoch(),
                    ps.coordinatorEpoch().orElse(0))).all().get();
            assertEquals(2L, admin.listOffsets(Map.of(tp, org.apache.kafka.clients.admin.OffsetSpec.latest()),
                    new org.apache.kafka.clients.admin.ListOffsetsOptions(org.apache.kafka.common.IsolationLevel.READ_COMMITTED))
                    .partitionResult(tp).get().offset(), "the abort marker releases the last stable offset");
        }
        producer.close(Duration.ZERO);
        assertEquals(0, readAll(topic, "read_committed", 0).size());
    }
}
