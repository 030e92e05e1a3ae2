package strait.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Consumer groups with both group protocols: subscribe, consume, commit, and the admin view of the group. */
class GroupTest {
    @ParameterizedTest(name = "group protocol {0} commits offsets")
    @ValueSource(strings = {"classic", "consumer"})
    void groupConsumesAndCommits(String protocol) throws Exception {
        String topic = Broker.topic("java-group-" + protocol);
        String group = "g-" + topic;
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
        }
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(Broker.props(), new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 300; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i));
            }
        }
        Properties cp = Broker.props();
        cp.put("group.id", group);
        cp.put("group.protocol", protocol);
        cp.put("auto.offset.reset", "earliest");
        cp.put("enable.auto.commit", "false");
        Set<String> seen = new HashSet<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (seen.size() < 300 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    seen.add(r.value());
                }
                consumer.commitSync();
            }
            assertEquals(300, seen.size(), "records consumed by the group");
            assertEquals(3, consumer.assignment().size(), "a lone member owns every partition");

            try (Admin admin = Admin.create(Broker.props())) {
                Map<TopicPartition, OffsetAndMetadata> offsets =
                        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                long total = offsets.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
                assertEquals(300, total, "committed offsets");
                ConsumerGroupDescription desc = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
                assertEquals(1, desc.members().size());
                assertTrue(admin.listGroups().all().get().stream().anyMatch(g -> g.groupId().equals(group)));
            }
        }
    }
}
