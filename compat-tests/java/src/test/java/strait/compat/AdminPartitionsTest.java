package strait.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreatePartitionsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/** AdminClient: createPartitions, electLeaders and deleteRecords. */
class AdminPartitionsTest {
    private static KafkaProducer<String, String> producer() {
        var p = Broker.props();
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    private static int partitionCount(Admin admin, String topic) throws Exception {
        return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
    }

    private interface Call {
        void run() throws Exception;
    }

    private static Throwable failure(Call c) {
        return assertThrows(ExecutionException.class, c::run).getCause();
    }

    @Test
    void createPartitionsGrowsTopic() throws Exception {
        String topic = Broker.topic("java-partitions");
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            int broker = admin.describeCluster().nodes().get().iterator().next().id();

            // validateOnly: accepted, nothing changes.
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5)),
                    new CreatePartitionsOptions().validateOnly(true)).all().get();
            assertEquals(1, partitionCount(admin, topic));

            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all().get();
            assertEquals(3, partitionCount(admin, topic));
            // With an explicit assignment of the new partition.
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4, List.of(List.of(broker))))).all().get();
            assertEquals(4, partitionCount(admin, topic));

            assertInstanceOf(InvalidPartitionsException.class,
                    failure(() -> admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(2))).all().get()));
            assertInstanceOf(InvalidPartitionsException.class,
                    failure(() -> admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all().get()));
            assertInstanceOf(InvalidReplicaAssignmentException.class, failure(() -> admin.createPartitions(
                    Map.of(topic, NewPartitions.increaseTo(5, List.of(List.of(broker + 100))))).all().get()));
            assertInstanceOf(UnknownTopicOrPartitionException.class, failure(() -> admin.createPartitions(
                    Map.of(Broker.topic("java-no-such"), NewPartitions.increaseTo(2))).all().get()));
            assertEquals(4, partitionCount(admin, topic));
        }

        // The new partitions take records, and a consumer reads them back.
        try (var producer = producer()) {
            for (int p = 0; p < 4; p++) {
                RecordMetadata md = producer.send(new ProducerRecord<>(topic, p, "k" + p, "v" + p)).get(30, TimeUnit.SECONDS);
                assertEquals(p, md.partition());
                assertEquals(0, md.offset());
            }
        }
        var cp = Broker.props();
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < 4; p++) {
                tps.add(new TopicPartition(topic, p));
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (got.size() < 4 && System.currentTimeMillis() < deadline) {
                consumer.poll(Duration.ofMillis(500)).forEach(got::add);
            }
            assertEquals(4, got.size());
            for (var r : got) {
                assertEquals("v" + r.partition(), r.value());
            }
        }
    }

    @Test
    void electPreferredLeaderNotNeededOnOneBroker() throws Exception {
        String topic = Broker.topic("java-elect");
        TopicPartition tp0 = new TopicPartition(topic, 0), tp1 = new TopicPartition(topic, 1);
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
            TopicPartition missing = new TopicPartition(topic, 7);
            Map<TopicPartition, Optional<Throwable>> res =
                    admin.electLeaders(ElectionType.PREFERRED, Set.of(tp0, tp1, missing)).partitions().get();
            assertEquals(3, res.size());
            assertInstanceOf(ElectionNotNeededException.class, res.get(tp0).orElseThrow());
            assertInstanceOf(ElectionNotNeededException.class, res.get(tp1).orElseThrow());
            assertInstanceOf(UnknownTopicOrPartitionException.class, res.get(missing).orElseThrow());
            assertInstanceOf(ElectionNotNeededException.class,
                    failure(() -> admin.electLeaders(ElectionType.PREFERRED, Set.of(tp0)).all().get()));
            // Unclean: the partition has a leader.
            assertInstanceOf(ElectionNotNeededException.class,
                    admin.electLeaders(ElectionType.UNCLEAN, Set.of(tp1)).partitions().get().get(tp1).orElseThrow());
            // Every partition (null): those already led by their preferred
            // replica are left out of the results, as Kafka does.
            Map<TopicPartition, Optional<Throwable>> all =
                    admin.electLeaders(ElectionType.PREFERRED, null).partitions().get();
            assertTrue(all.isEmpty(), all.toString());
        }
    }

    @Test
    void deleteRecordsUpToHighWatermark() throws Exception {
        String topic = Broker.topic("java-delete-records");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            try (var producer = producer()) {
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i));
                }
                producer.flush();
            }
            assertEquals(3, admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(3))).lowWatermarks().get(tp)
                    .get(30, TimeUnit.SECONDS).lowWatermark());
            // Below the current start: nothing changes.
            assertEquals(3, admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(1))).lowWatermarks().get(tp)
                    .get(30, TimeUnit.SECONDS).lowWatermark());
            assertInstanceOf(OffsetOutOfRangeException.class, failure(() -> admin.deleteRecords(
                    Map.of(tp, RecordsToDelete.beforeOffset(11))).lowWatermarks().get(tp).get(30, TimeUnit.SECONDS)));
            // -1: up to the high watermark.
            assertEquals(10, admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(-1))).lowWatermarks().get(tp)
                    .get(30, TimeUnit.SECONDS).lowWatermark());
            var offsets = admin.listOffsets(Map.of(tp, OffsetSpec.earliest()))
                    .partitionResult(tp).get();
            assertEquals(10, offsets.offset());
        }
    }
}
