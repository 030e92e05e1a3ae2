package strait.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.errors.TopicExistsException;
import org.junit.jupiter.api.Test;

/** AdminClient: topics and the cluster description. */
class AdminTest {
    @Test
    void createDescribeDeleteTopics() throws Exception {
        String topic = Broker.topic("java-admin");
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(topic, 4, (short) 1))).all().get();
            ExecutionException dup = assertThrows(ExecutionException.class,
                    () -> admin.createTopics(List.of(new NewTopic(topic, 4, (short) 1))).all().get());
            assertInstanceOf(TopicExistsException.class, dup.getCause());
            assertTrue(admin.listTopics().names().get().contains(topic));
            Map<String, TopicDescription> desc = admin.describeTopics(List.of(topic)).allTopicNames().get();
            assertEquals(4, desc.get(topic).partitions().size());
            assertEquals(1, desc.get(topic).partitions().get(0).leader().id());
            admin.deleteTopics(List.of(topic)).all().get();
            assertFalse(admin.listTopics().names().get().contains(topic));
        }
    }

    @Test
    void describeCluster() throws Exception {
        try (Admin admin = Admin.create(Broker.props())) {
            assertEquals(1, admin.describeCluster().nodes().get().size());
            assertFalse(admin.describeCluster().clusterId().get().isEmpty());
        }
    }
}
