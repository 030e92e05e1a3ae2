package strait.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigOp.OpType;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConfigEntry.ConfigSource;
import org.apache.kafka.clients.admin.ConfigEntry.ConfigType;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;

/** AdminClient: topic and broker configs (DescribeConfigs, IncrementalAlterConfigs). */
class AdminConfigsTest {
    private static Config describe(Admin admin, ConfigResource r) throws Exception {
        return admin.describeConfigs(List.of(r), new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true))
                .all().get().get(r);
    }

    private static List<String> synonyms(ConfigEntry e) {
        return e.synonyms().stream().map(s -> s.name() + "=" + s.value() + "@" + s.source()).collect(Collectors.toList());
    }

    private static void alter(Admin admin, ConfigResource r, AlterConfigOp... ops) throws Exception {
        admin.incrementalAlterConfigs(Map.of(r, List.of(ops))).all().get();
    }

    private static AlterConfigOp op(String name, String value, OpType type) {
        return new AlterConfigOp(new ConfigEntry(name, value), type);
    }

    @Test
    void describeTopicConfigs() throws Exception {
        String topic = Broker.topic("java-configs");
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(Map.of("retention.ms", "1000")))).all().get();
            Config c = describe(admin, new ConfigResource(ConfigResource.Type.TOPIC, topic));
            assertTrue(c.entries().size() >= 30, "every topic config is listed: " + c.entries().size());
            ConfigEntry retention = c.get("retention.ms");
            assertEquals("1000", retention.value());
            assertEquals(ConfigSource.DYNAMIC_TOPIC_CONFIG, retention.source());
            assertEquals(ConfigType.LONG, retention.type());
            assertEquals(List.of("retention.ms=1000@DYNAMIC_TOPIC_CONFIG"), synonyms(retention));
            ConfigEntry policy = c.get("cleanup.policy");
            assertEquals("delete", policy.value());
            assertTrue(policy.isDefault());
            assertEquals(List.of("log.cleanup.policy=delete@DEFAULT_CONFIG"), synonyms(policy));
            assertNotNull(policy.documentation());
            assertFalse(policy.isReadOnly());

            ExecutionException missing = assertThrows(ExecutionException.class,
                    () -> describe(admin, new ConfigResource(ConfigResource.Type.TOPIC, topic + "-missing")));
            assertInstanceOf(UnknownTopicOrPartitionException.class, missing.getCause());
        }
    }

    @Test
    void describeBrokerConfigs() throws Exception {
        try (Admin admin = Admin.create(Broker.props())) {
            String id = String.valueOf(admin.describeCluster().nodes().get().iterator().next().id());
            Config c = describe(admin, new ConfigResource(ConfigResource.Type.BROKER, id));
            ConfigEntry dirs = c.get("log.dirs");
            assertEquals(ConfigSource.STATIC_BROKER_CONFIG, dirs.source());
            assertTrue(dirs.isReadOnly());
            ConfigEntry partitions = c.get("num.partitions");
            assertEquals("1", partitions.value());
            assertEquals(ConfigSource.DEFAULT_CONFIG, partitions.source());
            assertTrue(partitions.isReadOnly());
            ConfigEntry password = c.get("ssl.keystore.password");
            assertTrue(password.isSensitive());
            assertNull(password.value());
            assertFalse(c.get("log.retention.ms").isReadOnly());
        }
    }

    @Test
    void incrementalAlterTopicConfigs() throws Exception {
        String topic = Broker.topic("java-alter");
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            alter(admin, r, op("retention.ms", "5000", OpType.SET), op("cleanup.policy", "compact", OpType.APPEND));
            Config c = describe(admin, r);
            assertEquals("5000", c.get("retention.ms").value());
            assertEquals("delete,compact", c.get("cleanup.policy").value());
            assertEquals(ConfigSource.DYNAMIC_TOPIC_CONFIG, c.get("cleanup.policy").source());

            alter(admin, r, op("cleanup.policy", "delete", OpType.SUBTRACT), op("retention.ms", null, OpType.DELETE));
            c = describe(admin, r);
            assertEquals("compact", c.get("cleanup.policy").value());
            assertEquals(ConfigSource.DEFAULT_CONFIG, c.get("retention.ms").source());

            admin.incrementalAlterConfigs(Map.of(r, List.of(op("retention.ms", "7", OpType.SET))),
                    new AlterConfigsOptions().validateOnly(true)).all().get();
            assertEquals(ConfigSource.DEFAULT_CONFIG, describe(admin, r).get("retention.ms").source());

            ExecutionException bad = assertThrows(ExecutionException.class,
                    () -> alter(admin, r, op("retention.ms", "soon", OpType.SET)));
            assertInstanceOf(InvalidConfigurationException.class, bad.getCause());
            assertEquals("Invalid value soon for configuration retention.ms: Not a number of type LONG", bad.getCause().getMessage());
            ExecutionException unknown = assertThrows(ExecutionException.class,
                    () -> alter(admin, new ConfigResource(ConfigResource.Type.TOPIC, topic + "-missing"), op("retention.ms", "1", OpType.SET)));
            assertInstanceOf(UnknownTopicOrPartitionException.class, unknown.getCause());
        }
    }

    @Test
    void incrementalAlterBrokerConfigs() throws Exception {
        try (Admin admin = Admin.create(Broker.props())) {
            String id = String.valueOf(admin.describeCluster().nodes().get().iterator().next().id());
            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, id);
            ConfigResource cluster = new ConfigResource(ConfigResource.Type.BROKER, "");
            alter(admin, cluster, op("log.retention.bytes", "1073741824", OpType.SET));
            alter(admin, broker, op("log.retention.bytes", "2147483648", OpType.SET));
            try {
                ConfigEntry e = describe(admin, broker).get("log.retention.bytes");
                assertEquals("2147483648", e.value());
                assertEquals(ConfigSource.DYNAMIC_BROKER_CONFIG, e.source());
                assertEquals(List.of("log.retention.bytes=2147483648@DYNAMIC_BROKER_CONFIG",
                        "log.retention.bytes=1073741824@DYNAMIC_DEFAULT_BROKER_CONFIG",
                        "log.retention.bytes=-1@DEFAULT_CONFIG"), synonyms(e));
                assertEquals("1073741824", describe(admin, cluster).get("log.retention.bytes").value());

                ExecutionException ro = assertThrows(ExecutionException.class,
                        () -> alter(admin, broker, op("num.partitions", "3", OpType.SET)));
                assertInstanceOf(InvalidRequestException.class, ro.getCause());
                assertEquals("Cannot update these configs dynamically: [num.partitions]", ro.getCause().getMessage());
            } finally {
                alter(admin, broker, op("log.retention.bytes", null, OpType.DELETE));
                alter(admin, cluster, op("log.retention.bytes", null, OpType.DELETE));
            }
            assertEquals(ConfigSource.DEFAULT_CONFIG, describe(admin, broker).get("log.retention.bytes").source());
        }
    }
}
