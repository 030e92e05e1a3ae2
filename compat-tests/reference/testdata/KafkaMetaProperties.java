// Loads log directories' meta.properties with Kafka's own classes
// (org.apache.kafka.metadata.properties.MetaPropertiesEnsemble, as a Kafka
// broker does at its start), for checkpoint_test.go. Arguments: CLUSTER_ID
// NODE_ID DIR... It verifies the directories against that cluster and
// node, printing "verified" or "rejected: <message>", then a line per
// directory, "DIR version=<v> cluster.id=<id> node.id=<id>
// directory.id=<id>" ("DIR none" when it has no file), then what the
// verification says for a cluster id of "Other" + CLUSTER_ID.
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

import org.apache.kafka.metadata.properties.MetaProperties;
import org.apache.kafka.metadata.properties.MetaPropertiesEnsemble;

public class KafkaMetaProperties {
    public static void main(String[] args) throws Exception {
        String clusterId = args[0];
        int nodeId = Integer.parseInt(args[1]);
        List<String> dirs = Arrays.asList(args).subList(2, args.length);
        MetaPropertiesEnsemble ensemble = new MetaPropertiesEnsemble.Loader().addLogDirs(dirs).load();
        System.out.println(verify(ensemble, clusterId, nodeId));
        for (String dir : dirs) {
            MetaProperties mp = ensemble.logDirProps().get(dir);
            if (mp == null) {
                System.out.println(dir + " none");
                continue;
            }
            System.out.println(dir + " version=" + mp.version().numberString() +
                " cluster.id=" + mp.clusterId().orElse("") +
                " node.id=" + (mp.nodeId().isPresent() ? Integer.toString(mp.nodeId().getAsInt()) : "") +
                " directory.id=" + mp.directoryId().map(Object::toString).orElse(""));
        }
        System.out.println(verify(ensemble, "Other" + clusterId, nodeId));
    }

    private static String verify(MetaPropertiesEnsemble ensemble, String clusterId, int nodeId) {
        try {
            ensemble.verify(Optional.of(clusterId), OptionalInt.of(nodeId),
                EnumSet.of(MetaPropertiesEnsemble.VerificationFlag.REQUIRE_AT_LEAST_ONE_VALID));
            return "verified";
        } catch (RuntimeException e) {
            return "rejected: " + e.getMessage();
        }
    }
}
