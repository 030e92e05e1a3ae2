// Reads log directories' clean-shutdown markers with Kafka's own class
// (org.apache.kafka.storage.internals.checkpoint.CleanShutdownFileHandler),
// for checkpoint_test.go. For each DIR argument it prints
// "DIR exists=<bool> epoch=<broker epoch, or none>", and has Kafka's class
// write a marker for the same epoch into DIR/kafka (so the caller can
// compare the bytes).
import java.io.File;
import java.util.OptionalLong;

import org.apache.kafka.storage.internals.checkpoint.CleanShutdownFileHandler;

public class KafkaCleanShutdown {
    public static void main(String[] args) throws Exception {
        for (String dir : args) {
            CleanShutdownFileHandler h = new CleanShutdownFileHandler(dir);
            OptionalLong epoch = h.read();
            System.out.println(dir + " exists=" + h.exists() + " epoch=" + (epoch.isPresent() ? Long.toString(epoch.getAsLong()) : "none"));
            if (epoch.isPresent()) {
                File out = new File(dir, "kafka");
                out.mkdirs();
                new CleanShutdownFileHandler(out.getPath()).write(epoch.getAsLong());
            }
        }
    }
}
