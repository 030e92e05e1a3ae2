package strait.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/** AdminClient: describeCluster, describeTopics (DescribeTopicPartitions), describeLogDirs, deleteRecords, reassignments. */
class AdminClusterTest {
    private static void produce(String topic, int partition, int n) throws Exception {
        var p = Broker.props();
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, partition, "k" + i, "v" + i));
            }
            producer.flush();
        }
    }

    @Test
    void describeClusterWithController() throws Exception {
        try (Admin admin = Admin.create(Broker.props())) {
            DescribeClusterResult r = admin.describeCluster(new DescribeClusterOptions().includeAuthorizedOperations(true));
            Collection<Node> nodes = r.nodes().get();
            assertEquals(1, nodes.size());
            Node controller = r.controller().get();
            assertEquals(nodes.iterator().next().id(), controller.id());
            assertFalse(r.clusterId().get().isEmpty());
            Set<AclOperation> ops = r.authorizedOperations().get();
            assertTrue(ops.contains(AclOperation.DESCRIBE) && ops.contains(AclOperation.ALTER_CONFIGS), ops.toString());
        }
    }

    @Test
    void describeTopicsPagesThroughPartitions() throws Exception {
        String a = Broker.topic("java-dtp-a"), b = Broker.topic("java-dtp-b");
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(a, 5, (short) 1), new NewTopic(b, 3, (short) 1))).all().get();
            // Two partitions per response: the client follows the cursor.
            Map<String, TopicDescription> desc = admin.describeTopics(List.of(a, b),
                    new DescribeTopicsOptions().partitionSizeLimitPerResponse(2)).allTopicNames().get();
            assertEquals(5, desc.get(a).partitions().size());
            assertEquals(3, desc.get(b).partitions().size());
            for (int i = 0; i < 5; i++) {
                TopicPartitionInfo p = desc.get(a).partitions().get(i);
                assertEquals(i, p.partition());
                assertEquals(1, p.replicas().size());
                // Only DescribeTopicPartitions fills the ELR lists (Metadata leaves them null).
                assertNotNull(p.elr());
                assertNotNull(p.lastKnownElr());
            }
        }
    }

    @Test
    void describeLogDirsAndDeleteRecords() throws Exception {
        String topic = Broker.topic("java-logdirs");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            produce(topic, 0, 10);
            int id = admin.describeCluster().nodes().get().iterator().next().id();
            Map<String, LogDirDescription> dirs = admin.describeLogDirs(List.of(id)).allDescriptions().get().get(id);
            assertEquals(1, dirs.size());
            LogDirDescription dir = dirs.values().iterator().next();
            ReplicaInfo replica = dir.replicaInfos().get(tp);
            assertNotNull(replica, dir.toString());
            assertTrue(replica.size() > 0);
            assertEquals(0, replica.offsetLag());
            assertFalse(replica.isFuture());
            assertTrue(dir.totalBytes().isPresent() && dir.usableBytes().isPresent());
            assertTrue(dir.totalBytes().getAsLong() >= dir.usableBytes().getAsLong());

            long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(4))).lowWatermarks().get(tp)
                    .get(30, TimeUnit.SECONDS).lowWatermark();
            assertEquals(4, low);
            assertTrue(admin.listPartitionReassignments().reassignments().get().isEmpty());
        }
    }
}
