// Reads per-log-directory offset checkpoints with Kafka's own class
// (org.apache.kafka.storage.internals.checkpoint.OffsetCheckpointFile), for
// checkpoint_test.go. For each FILE argument it prints "== FILE", then the
// entries Kafka read as "topic partition offset" lines sorted by topic, then
// partition, and writes the same entries in that order with Kafka's class
// to FILE.kafka (so the caller can compare the bytes). One JVM for all the
// files: starting one costs seconds.
import java.io.File;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.storage.internals.checkpoint.OffsetCheckpointFile;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;

public class KafkaCheckpoint {
    public static void main(String[] args) throws Exception {
        LogDirFailureChannel channel = new LogDirFailureChannel(1);
        for (String path : args) {
            List<Map.Entry<TopicPartition, Long>> entries =
                new ArrayList<>(new OffsetCheckpointFile(new File(path), channel).read().entrySet());
            entries.sort((a, b) -> {
                int c = a.getKey().topic().compareTo(b.getKey().topic());
                return c != 0 ? c : Integer.compare(a.getKey().partition(), b.getKey().partition());
            });
            System.out.println("== " + path);
            Map<TopicPartition, Long> sorted = new LinkedHashMap<>();
            for (Map.Entry<TopicPartition, Long> e : entries) {
                System.out.println(e.getKey().topic() + " " + e.getKey().partition() + " " + e.getValue());
                sorted.put(e.getKey(), e.getValue());
            }
            new OffsetCheckpointFile(new File(path + ".kafka"), channel).write(sorted);
        }
    }
}
