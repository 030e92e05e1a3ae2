package strait.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Kafka Streams, unmodified, against Strait: the classic word count with
 * processing.guarantee=exactly_once_v2. The input is keyed by line number, so
 * counting by word needs the repartition topic; the counts live in a state
 * store backed by a compacted changelog topic. Streams drives the classic
 * group protocol, transactions (InitProducerId, AddPartitionsToTxn,
 * TxnOffsetCommit, EndTxn), CreateTopics and DescribeConfigs for its
 * internal topics, ListOffsets, DeleteRecords on the repartition topic and
 * LeaveGroup on close.
 */
class WordCountTest {
    static final String BOOTSTRAP = System.getProperty("bootstrap.servers", "127.0.0.1:9092");
    static final String STORE = "counts";
    static final Duration WAIT = Duration.ofSeconds(60);

    static final List<String> BATCH1 = lines(1, 1500,
            "the quick brown fox jumps over the lazy dog",
            "the dog barks",
            "a fox is quick and a dog is lazy",
            "Kafka streams counts words",
            "streams of words and words of streams",
            "exactly once means exactly once");
    static final List<String> BATCH2 = lines(2, 500,
            "the fox returns",
            "words words words",
            "a lazy afternoon for the dog",
            "once more with feeling");

    String app;
    String input;
    String output;
    long failAt; // the count update that throws once; 0: none
    final AtomicLong updates = new AtomicLong();
    final AtomicBoolean failed = new AtomicBoolean();
    final Map<String, Throwable> errors = new ConcurrentHashMap<>(); // dead stream threads
    final List<Path> stateDirs = new ArrayList<>();
    final List<KafkaStreams> running = new ArrayList<>();

    @BeforeEach
    void setUp() throws Exception {
        String id = UUID.randomUUID().toString().substring(0, 8);
        app = "wordcount-" + id;
        input = "streams-lines-" + id;
        output = "streams-counts-" + id;
        try (Admin admin = Admin.create(props())) {
            admin.createTopics(List.of(new NewTopic(input, 2, (short) 1), new NewTopic(output, 2, (short) 1)))
                    .all().get();
        }
    }

    @AfterEach
    void tearDown() throws IOException {
        for (KafkaStreams s : running) {
            s.close(Duration.ofSeconds(10));
        }
        for (Path d : stateDirs) {
            deleteTree(d);
        }
    }

    /** One pass: lines in, exact counts out (read_committed), internal topics as Kafka makes them. */
    @Test
    void wordCountExactlyOnceV2ProduceConsumeGroupInternalTopics() throws Exception {
        produceLines(BATCH1, 0);
        KafkaStreams streams = start(newStateDir(), null);
        Map<String, Long> expected = count(BATCH1);
        assertEquals(expected, awaitCounts(expected), "word counts read back with read_committed");

        try (Admin admin = Admin.create(props())) {
            Set<String> topics = admin.listTopics().names().get();
            String repartition = app + "-words-repartition";
            String changelog = app + "-" + STORE + "-changelog";
            assertTrue(topics.contains(repartition), "repartition topic " + repartition + " in " + topics);
            assertTrue(topics.contains(changelog), "changelog topic " + changelog + " in " + topics);
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
            Config cfg = admin.describeConfigs(List.of(res)).all().get().get(res);
            assertEquals("compact", cfg.get("cleanup.policy").value(), "changelog cleanup.policy");
            ConfigResource rep = new ConfigResource(ConfigResource.Type.TOPIC, repartition);
            Config repCfg = admin.describeConfigs(List.of(rep)).all().get().get(rep);
            assertEquals("delete", repCfg.get("cleanup.policy").value(), "repartition cleanup.policy");
            // The overrides Streams asks for in CreateTopics (RepartitionTopicConfig).
            assertEquals("-1", repCfg.get("retention.ms").value(), "repartition retention.ms");
            assertEquals("52428800", repCfg.get("segment.bytes").value(), "repartition segment.bytes");

            // Streams purges what it has committed from the repartition topic (DeleteRecords).
            List<TopicPartition> repParts = List.of(new TopicPartition(repartition, 0), new TopicPartition(repartition, 1));
            long deadline = System.nanoTime() + WAIT.toNanos();
            long purged = 0;
            while (purged == 0 && System.nanoTime() < deadline) {
                Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
                repParts.forEach(tp -> earliest.put(tp, OffsetSpec.earliest()));
                purged = admin.listOffsets(earliest).all().get().values().stream()
                        .mapToLong(ListOffsetsResult.ListOffsetsResultInfo::offset).sum();
                Thread.sleep(200);
            }
            assertTrue(purged > 0, "repartition topic purged up to the committed offsets (log start offsets sum " + purged + ")");
        }
        assertTrue(streams.state().isRunningOrRebalancing(), "application still running: " + streams.state());
    }

    /**
     * Close the application, wipe its local state, produce more lines and start it
     * again with the same application.id: the store is restored from the changelog
     * and the counts continue from it (totals over both batches).
     */
    @Test
    void stateAndCommittedOffsetsRestoredAfterRestartExactlyOnce() throws Exception {
        produceLines(BATCH1, 0);
        KafkaStreams first = start(newStateDir(), null);
        Map<String, Long> expected1 = count(BATCH1);
        assertEquals(expected1, awaitCounts(expected1), "counts after the first run");
        // Leave the group on close, so the restarted instance need not wait out the old member's session.
        first.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                .withTimeout(Duration.ofSeconds(30)));
        running.remove(first);
        assertEquals(KafkaStreams.State.NOT_RUNNING, first.state(), "first instance closed");

        produceLines(BATCH2, BATCH1.size());
        AtomicLong restored = new AtomicLong();
        KafkaStreams second = start(newStateDir(), restored);
        List<String> all = new ArrayList<>(BATCH1);
        all.addAll(BATCH2);
        Map<String, Long> expected = count(all);
        assertEquals(expected, awaitCounts(expected), "counts continue from the restored state");
        assertTrue(restored.get() > 0, "the store was restored from the changelog (" + restored.get() + " records)");
        assertTrue(second.state().isRunningOrRebalancing(), "application still running: " + second.state());
    }

    /**
     * A stream thread fails in the middle of a transaction (after the store, its
     * changelog and the output have been written for part of the input) and is
     * replaced: the open transaction is aborted, the task's state is rebuilt from
     * the committed changelog and the input reprocessed from the committed offsets.
     * Under read_committed the counts are still exact: nothing counted twice.
     */
    @Test
    void exactlyOnceTransactionAbortedOnThreadFailure() throws Exception {
        produceLines(BATCH1, 0);
        Map<String, Long> expected = count(BATCH1);
        long words = expected.values().stream().mapToLong(Long::longValue).sum();
        failAt = words / 2;
        KafkaStreams streams = start(newStateDir(), null);
        assertEquals(expected, awaitCounts(expected), "word counts after a failed and replaced stream thread");
        assertTrue(failed.get(), "the injected failure happened (at count update " + failAt + " of " + words + ")");
        assertEquals(1, errors.size(), "one stream thread died and was replaced: " + errors);
        assertTrue(streams.state().isRunningOrRebalancing(), "application running: " + streams.state());
    }

    // --- helpers ---

    /** The fixed lines, then n lines of words drawn from a small vocabulary with a fixed seed. */
    static List<String> lines(long seed, int n, String... fixed) {
        String[] vocab = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
                + "sigma tau upsilon phi chi psi omega the a of and").split(" ");
        java.util.Random rnd = new java.util.Random(seed);
        List<String> out = new ArrayList<>(List.of(fixed));
        for (int i = 0; i < n; i++) {
            int k = 1 + rnd.nextInt(10);
            StringBuilder b = new StringBuilder();
            for (int j = 0; j < k; j++) {
                b.append(j == 0 ? "" : " ").append(vocab[rnd.nextInt(vocab.length)]);
            }
            out.add(b.toString());
        }
        return out;
    }

    static Properties props() {
        Properties p = new Properties();
        p.put("bootstrap.servers", BOOTSTRAP);
        return p;
    }

    static Map<String, Long> count(List<String> lines) {
        Map<String, Long> out = new TreeMap<>();
        for (String line : lines) {
            for (String w : words(line)) {
                out.merge(w, 1L, Long::sum);
            }
        }
        return out;
    }

    static List<String> words(String line) {
        return Arrays.stream(line.toLowerCase(Locale.ROOT).split("\\W+")).filter(w -> !w.isEmpty()).toList();
    }

    Path newStateDir() throws IOException {
        // Under target/, not the OS temp dir (Streams warns about that one).
        Path parent = Files.createDirectories(Path.of("target", "state"));
        Path d = Files.createTempDirectory(parent, "app-").toAbsolutePath();
        stateDirs.add(d);
        return d;
    }

    void produceLines(List<String> lines, int firstKey) throws Exception {
        Properties p = props();
        p.put("acks", "all");
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
            for (int i = 0; i < lines.size(); i++) {
                sent.add(producer.send(new ProducerRecord<>(input, "line-" + (firstKey + i), lines.get(i))));
            }
            for (java.util.concurrent.Future<?> f : sent) {
                f.get();
            }
        }
    }

    KafkaStreams start(Path stateDir, AtomicLong restored) throws Exception {
        return start(stateDir, restored, 1);
    }

    KafkaStreams start(Path stateDir, AtomicLong restored, int threads) throws Exception {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(WordCountTest::words)
                .groupBy((line, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.as(STORE))
                .toStream()
                .peek((word, n) -> {
                    if (failAt > 0 && updates.incrementAndGet() == failAt && failed.compareAndSet(false, true)) {
                        throw new IllegalStateException("injected failure at count update " + failAt);
                    }
                })
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        Properties p = props();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 200);
        // No record cache: every count update goes to the changelog and the output, in many transactions.
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        groupProtocol(p);

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.setUncaughtExceptionHandler(e -> {
            errors.put(Thread.currentThread().getName(), e);
            // Only the injected failure is expected; it costs the thread, not the application.
            return failed.get() && errors.size() == 1
                    ? StreamThreadExceptionResponse.REPLACE_THREAD
                    : StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        if (restored != null) {
            streams.setGlobalStateRestoreListener(new StateRestoreListener() {
                @Override
                public void onRestoreStart(TopicPartition tp, String store, long start, long end) {}

                @Override
                public void onBatchRestored(TopicPartition tp, String store, long end, long n) {}

                @Override
                public void onRestoreEnd(TopicPartition tp, String store, long total) {
                    restored.addAndGet(total);
                }
            });
        }
        running.add(streams);
        streams.start();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (streams.state() != KafkaStreams.State.RUNNING) {
            assertTrue(failed.get() || errors.isEmpty(), "streams thread died: " + errors);
            assertTrue(streams.state() != KafkaStreams.State.ERROR && streams.state() != KafkaStreams.State.NOT_RUNNING,
                    "streams state " + streams.state() + " " + errors);
            assertTrue(System.nanoTime() < deadline, "streams not RUNNING after " + WAIT + ": " + streams.state());
            Thread.sleep(100);
        }
        return streams;
    }

    /**
     * The rebalance protocol: the classic one here. Streams' consumers never send LeaveGroup when a
     * thread dies: its replacement waits for the dead member's session to expire. Kafka's
     * group.min.session.timeout.ms is 6 s.
     */
    void groupProtocol(Properties p) throws Exception {
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1500);
    }

    /** Reads the output topic (read_committed) until the latest count per word equals expected, or times out. */
    Map<String, Long> awaitCounts(Map<String, Long> expected) {
        Properties p = props();
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        Map<String, Long> latest = new TreeMap<>();
        try (KafkaConsumer<String, Long> consumer =
                new KafkaConsumer<>(p, new StringDeserializer(), new LongDeserializer())) {
            List<TopicPartition> parts = consumer.partitionsFor(output).stream()
                    .map(pi -> new TopicPartition(pi.topic(), pi.partition())).toList();
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (!latest.equals(expected) && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(200))) {
                    latest.put(r.key(), r.value());
                }
            }
            // Whatever is committed past this point must not change the answer either.
            Map<TopicPartition, Long> end = consumer.endOffsets(parts);
            Map<TopicPartition, Long> pos = new HashMap<>();
            for (TopicPartition tp : parts) {
                pos.put(tp, consumer.position(tp));
            }
            long until = System.nanoTime() + Duration.ofMillis(500).toNanos();
            while (System.nanoTime() < until) {
                for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(100))) {
                    latest.put(r.key(), r.value());
                }
            }
            if (!latest.equals(expected)) {
                System.out.println("output positions " + pos + " end offsets (read_committed) " + end);
            }
        }
        return latest;
    }

    static void deleteTree(Path d) throws IOException {
        if (!Files.exists(d)) {
            return;
        }
        try (Stream<Path> s = Files.walk(d)) {
            s.sorted(Comparator.reverseOrder()).forEach(x -> x.toFile().delete());
        }
    }
}
