package strait.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.Test;

/**
 * The same word count and exactly-once cases as WordCountTest, with
 * group.protocol=streams (KIP-1071): the members are the stream threads, the
 * broker keeps the topology, creates the repartition and changelog topics and
 * assigns the tasks (StreamsGroupHeartbeat); offsets are committed
 * (TxnOffsetCommit) with the member epoch. The group's session timeout and
 * heartbeat interval come from its group configs (streams.session.timeout.ms,
 * streams.heartbeat.interval.ms), set before the application starts; run.sh
 * lowers the broker's group.streams.min.* bounds to allow them.
 */
class StreamsProtocolWordCountTest extends WordCountTest {
    String standbys = "0"; // the group's streams.num.standby.replicas

    @Override
    void groupProtocol(Properties p) throws Exception {
        p.put("group.protocol", "streams");
        try (Admin admin = Admin.create(props())) {
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, app);
            admin.incrementalAlterConfigs(Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("streams.session.timeout.ms", "6000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("streams.heartbeat.interval.ms", "1000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("streams.num.standby.replicas", standbys), AlterConfigOp.OpType.SET))))
                    .all().get();
        }
    }

    /**
     * Two instances (two processes) with streams.num.standby.replicas=1: each runs two of the four
     * active tasks, and each task of the counting subtopology (the stateful one) has one standby,
     * never on the member running it, and the stateless one none; the counts stay exact.
     */
    @Test
    void standbyTasksOnTheOtherInstance() throws Exception {
        standbys = "1";
        produceLines(BATCH1, 0);
        start(newStateDir(), null, 1);
        start(newStateDir(), null, 1);
        Map<String, Long> expected = count(BATCH1);
        assertEquals(expected, awaitCounts(expected), "word counts with two instances");
        StreamsGroupDescription d = null;
        try (Admin admin = Admin.create(props())) {
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (System.nanoTime() < deadline) {
                d = admin.describeStreamsGroups(List.of(app)).all().get().get(app);
                if (d.groupState() == GroupState.STABLE && d.members().size() == 2 && d.members().stream()
                        .mapToInt(m -> m.assignment().standbyTasks().stream().mapToInt(t -> t.partitions().size()).sum())
                        .sum() == 2) {
                    break;
                }
                Thread.sleep(200);
            }
        }
        assertNotNull(d);
        assertEquals(GroupState.STABLE, d.groupState(), "group state: " + d);
        assertEquals(2, d.members().size(), "members: " + d);
        assertEquals(2, d.members().stream().map(StreamsGroupMemberDescription::processId).distinct().count(),
                "two processes: " + d);
        TreeSet<String> standby = new TreeSet<>();
        for (StreamsGroupMemberDescription m : d.members()) {
            TreeSet<String> active = new TreeSet<>();
            for (StreamsGroupMemberAssignment.TaskIds t : m.assignment().activeTasks()) {
                t.partitions().forEach(p -> active.add(t.subtopologyId() + "_" + p));
            }
            assertEquals(2, active.size(), "two active tasks each: " + d);
            for (StreamsGroupMemberAssignment.TaskIds t : m.assignment().standbyTasks()) {
                for (int p : t.partitions()) {
                    String task = t.subtopologyId() + "_" + p;
                    assertTrue(!active.contains(task), "standby and active of " + task + " on one member: " + d);
                    assertTrue(standby.add(task), "two standbys of " + task + ": " + d);
                }
            }
        }
        assertEquals(new TreeSet<>(List.of("1_0", "1_1")), standby, "standbys of the stateful subtopology: " + d);
    }

    /**
     * Two stream threads: two members of one process. Admin's describeStreamsGroups and
     * Kafka's kafka-streams-groups --describe show both members and the four active tasks
     * (two subtopologies, two partitions each) split between them; ListGroups types it "streams";
     * kafka-streams-groups --list, --describe --state and --describe --offsets show the group,
     * its state and the committed offsets (lag 0) of the input and repartition topics, and
     * --describe --topology the topology description a member pushed (KIP-1331).
     */
    @Test
    void streamsGroupDescribedWithMembersAndTasks() throws Exception {
        produceLines(BATCH1, 0);
        KafkaStreams streams = start(newStateDir(), null, 2);
        Map<String, Long> expected = count(BATCH1);
        assertEquals(expected, awaitCounts(expected), "word counts with two stream threads");

        StreamsGroupDescription d = null;
        try (Admin admin = Admin.create(props())) {
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (System.nanoTime() < deadline) {
                d = admin.describeStreamsGroups(List.of(app)).all().get().get(app);
                if (d.groupState() == GroupState.STABLE && d.members().size() == 2) {
                    break;
                }
                Thread.sleep(200);
            }
            assertNotNull(d);
            assertEquals(GroupState.STABLE, d.groupState(), "group state: " + d);
            assertEquals(2, d.members().size(), "members: " + d);
            TreeSet<String> active = new TreeSet<>();
            for (StreamsGroupMemberDescription m : d.members()) {
                assertTrue(m.memberEpoch() > 0, "member epoch: " + m);
                assertEquals(m.assignment(), m.targetAssignment(), "member reconciled: " + m);
                int mine = 0;
                for (StreamsGroupMemberAssignment.TaskIds t : m.assignment().activeTasks()) {
                    for (int p : t.partitions()) {
                        assertTrue(active.add(t.subtopologyId() + "_" + p), "task given twice: " + d);
                        mine++;
                    }
                }
                assertEquals(2, mine, "each member runs two of the four tasks: " + d);
            }
            assertEquals(4, active.size(), "active tasks: " + active);
            assertEquals(2, d.subtopologies().size(), "subtopologies: " + d.subtopologies());

            List<String> types = new ArrayList<>();
            for (GroupListing g : admin.listGroups(new ListGroupsOptions().withTypes(java.util.Set.of(GroupType.STREAMS)))
                    .all().get()) {
                types.add(g.groupId() + ":" + g.type().map(GroupType::toString).orElse("?"));
            }
            assertTrue(types.contains(app + ":Streams"), "ListGroups type filter streams: " + types);
        }

        // Kafka's CLI (kafka-streams-groups.sh runs this class) from the jars run.sh fetched.
        String cp = System.getProperty("kafka.cli.classpath", "");
        assertTrue(!cp.isEmpty(), "-Dkafka.cli.classpath (Kafka's tool jars) is set by run.sh");
        String out = runCli(cp, "--describe", "--group", app, "--members");
        for (StreamsGroupMemberDescription m : d.members()) {
            assertTrue(out.contains(m.memberId()), "member " + m.memberId() + " in:\n" + out);
        }
        assertTrue(out.matches("(?s).*ACTIVE:.*0:\\[\\d.*"), "active tasks listed in:\n" + out);
        String list = runCli(cp, "--list");
        assertTrue(list.lines().anyMatch(l -> l.trim().equals(app)), "group listed in:\n" + list);
        String state = runCli(cp, "--describe", "--group", app, "--state");
        assertTrue(state.contains("Stable"), "group state in:\n" + state);
        String offsets = runCli(cp, "--describe", "--group", app, "--offsets");
        assertTrue(offsets.contains(input) && offsets.contains(app + "-words-repartition"),
                "committed offsets of the input and repartition topics in:\n" + offsets);
        // KIP-1331: the broker asked a member for the topology description
        // (StreamsGroupTopologyDescriptionUpdate); the tool shows it.
        String topology = "";
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() < deadline && !topology.contains("Sub-topology: 1")) {
            topology = runCli(cp, "--describe", "--group", app, "--topology");
            if (!topology.contains("Sub-topology: 1")) {
                Thread.sleep(500);
            }
        }
        assertTrue(topology.contains("Sub-topology: 0") && topology.contains("Sub-topology: 1")
                && topology.contains(input) && topology.contains(app + "-words-repartition"),
                "the topology description (two sub-topologies, the input and repartition topics) in:\n" + topology);
        assertTrue(streams.state().isRunningOrRebalancing(), "application running: " + streams.state());
    }

    static String runCli(String cp, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Dlog4j2.level=error", "-cp", cp, "org.apache.kafka.tools.streams.StreamsGroupCommand",
                "--bootstrap-server", BOOTSTRAP));
        cmd.addAll(List.of(args));
        File log = Files.createTempFile(Path.of("target"), "cli-", ".txt").toFile();
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log).start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "kafka-streams-groups finished within 60 s");
        String out = Files.readString(log.toPath(), StandardCharsets.UTF_8);
        System.out.println("kafka-streams-groups " + String.join(" ", args) + ":\n" + out);
        assertEquals(0, p.exitValue(), "kafka-streams-groups exit code; output:\n" + out);
        return out;
    }
}
