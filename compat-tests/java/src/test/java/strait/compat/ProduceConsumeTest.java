package strait.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The Java producer with each codec, and a consumer assigned to the partitions, reading it all back. */
class ProduceConsumeTest {
    static final int RECORDS = 5000;

    @ParameterizedTest(name = "compression {0}")
    @ValueSource(strings = {"none", "gzip", "snappy", "lz4", "zstd"})
    void produceAndConsumeEveryCodec(String codec) throws Exception {
        String topic = Broker.topic("java-" + codec);
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
        }
        Properties pp = Broker.props();
        pp.put("compression.type", codec);
        pp.put("acks", "all");
        pp.put("linger.ms", "5");
        List<RecordMetadata> acked = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer())) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (int i = 0; i < RECORDS; i++) {
                RecordHeaders headers = new RecordHeaders();
                headers.add("i", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                futures.add(producer.send(new ProducerRecord<>(topic, i % 3, 1_700_000_000_000L + i,
                        ("k" + i).getBytes(StandardCharsets.UTF_8), ("v" + i).getBytes(StandardCharsets.UTF_8), headers)));
            }
            for (Future<RecordMetadata> f : futures) {
                acked.add(f.get());
            }
        }
        for (int i = 0; i < RECORDS; i++) {
            assertEquals(i / 3, acked.get(i).offset(), "offset of record " + i);
        }

        Properties cp = Broker.props();
        cp.put("auto.offset.reset", "earliest");
        cp.put("enable.auto.commit", "false");
        List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1), new TopicPartition(topic, 2)));
            consumer.seekToBeginning(consumer.assignment());
            long deadline = System.currentTimeMillis() + 30_000;
            while (got.size() < RECORDS && System.currentTimeMillis() < deadline) {
                consumer.poll(Duration.ofMillis(500)).forEach(got::add);
            }
        }
        assertEquals(RECORDS, got.size());
        for (ConsumerRecord<byte[], byte[]> r : got) {
            int i = (int) (r.offset() * 3 + r.partition());
            assertArrayEquals(("k" + i).getBytes(StandardCharsets.UTF_8), r.key());
            assertArrayEquals(("v" + i).getBytes(StandardCharsets.UTF_8), r.value());
            assertEquals(1_700_000_000_000L + i, r.timestamp());
            assertArrayEquals(Integer.toString(i).getBytes(StandardCharsets.UTF_8), r.headers().lastHeader("i").value());
        }
    }
}
