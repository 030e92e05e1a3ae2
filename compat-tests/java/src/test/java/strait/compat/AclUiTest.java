package strait.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The AdminClient calls of the ACL pages of AKHQ (github.com/tchiotludo/akhq)
 * and Kafdrop (github.com/obsidiandynamics/kafdrop), and of the pages around
 * them, against the suite's broker (no authorizer: Kafka 4.4 answers the ACL
 * APIs SECURITY_DISABLED) and against the broker run.sh starts with the
 * StandardAuthorizer (-Dacl.bootstrap.servers: SASL/PLAIN users admin, a super
 * user, and alice). Each check names the UI code it reproduces. Every
 * expectation was checked against Apache Kafka 4.4 (the same class run with
 * both properties pointing at Kafka brokers started by bench/kafka/kafka.sh).
 *
 * <ul>
 *   <li>AKHQ AccessControlListRepository.findAll: describeAcls(AclBindingFilter.ANY);
 *       findByResourceType (the topic and group pages' ACL tabs): a
 *       ResourcePatternFilter(type, name, PatternType.ANY) with any entry;
 *       findByPrincipal: an AccessControlEntryFilter(principal, null, ANY, ANY)
 *       on any resource. AbstractKafkaWrapper.describeAcls reads
 *       SecurityDisabledException, ClusterAuthorizationException and
 *       TopicAuthorizationException as "no ACLs".</li>
 *   <li>Kafdrop KafkaHighLevelAdminClient.listAcls (the /acl page):
 *       describeAcls(new AclBindingFilter(ResourcePatternFilter.ANY,
 *       AccessControlEntryFilter.ANY)), SecurityDisabledException read as
 *       "no ACLs", any other error failing the page.</li>
 *   <li>AKHQ describeCluster (clusterId, nodes, controller), listTopics
 *       (listInternal(true)), describeTopics, describeConfigs (authorization
 *       errors read as "no configs"), describeLogDirs (ClusterAuthorizationException
 *       read as "no log dirs"); Kafdrop describeCluster, describeTopicConfigs
 *       (TopicAuthorizationException read as "no configs"),
 *       listConsumerGroupOffsetsIfAuthorized (GroupAuthorizationException
 *       read as "skip the group").</li>
 *   <li>authorizedOperations of describeCluster and describeTopics
 *       (includeAuthorizedOperations), and describeClientQuotas (the quotas
 *       pages), which the issue lists beside them.</li>
 * </ul>
 */
class AclUiTest {
    private static final String ACL_BOOTSTRAP = System.getProperty("acl.bootstrap.servers", "");

    /** A client of the authorizer's broker as user (password user-pw). */
    private static Admin secured(String user) {
        assertFalse(ACL_BOOTSTRAP.isEmpty(), "run.sh passes -Dacl.bootstrap.servers (the broker with the StandardAuthorizer)");
        Properties p = new Properties();
        p.put("bootstrap.servers", ACL_BOOTSTRAP);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "PLAIN");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                + user + "\" password=\"" + user + "-pw\";");
        return Admin.create(p);
    }

    private static AclBindingFilter akhqResource(ResourceType type, String name) {
        return new AclBindingFilter(new ResourcePatternFilter(type, name, PatternType.ANY), AccessControlEntryFilter.ANY);
    }

    private static AclBindingFilter akhqPrincipal(String principal) {
        return new AclBindingFilter(new ResourcePatternFilter(ResourceType.ANY, null, PatternType.ANY),
                new AccessControlEntryFilter(principal, null, AclOperation.ANY, AclPermissionType.ANY));
    }

    private static final AclBindingFilter KAFDROP_ALL =
            new AclBindingFilter(ResourcePatternFilter.ANY, AccessControlEntryFilter.ANY);

    private static void assertCause(Class<? extends Throwable> want, Executable call) {
        ExecutionException e = assertThrows(ExecutionException.class, call);
        assertInstanceOf(want, e.getCause());
    }

    private static Set<String> rows(Collection<AclBinding> bindings) {
        return bindings.stream().map(b -> b.pattern().resourceType() + ":" + b.pattern().patternType() + ":"
                + b.pattern().name() + " " + b.entry().principal() + " " + b.entry().operation() + " "
                + b.entry().permissionType()).collect(Collectors.toCollection(TreeSet::new));
    }

    @Test
    void uiCallsWithoutAnAuthorizer() throws Exception {
        String topic = Broker.topic("java-ui");
        try (Admin admin = Admin.create(Broker.props())) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            // Kafdrop listAcls, AKHQ findAll / findByResourceType / findByPrincipal.
            for (AclBindingFilter f : List.of(KAFDROP_ALL, AclBindingFilter.ANY, akhqResource(ResourceType.TOPIC, topic),
                    akhqResource(ResourceType.GROUP, "g"), akhqPrincipal("User:alice"))) {
                assertCause(SecurityDisabledException.class, () -> admin.describeAcls(f).values().get());
            }
            // AKHQ and Kafdrop describeCluster.
            DescribeClusterResult cluster = admin.describeCluster();
            assertNotNull(cluster.clusterId().get());
            assertFalse(cluster.nodes().get().isEmpty());
            assertNotNull(cluster.controller().get());
            // AKHQ listTopics(listInternal(true)) and describeTopics.
            assertTrue(admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get().contains(topic));
            assertEquals(1, admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size());
            // AKHQ describeConfigs / Kafdrop describeTopicConfigs, AKHQ describeLogDirs.
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            assertNotNull(admin.describeConfigs(List.of(res)).all().get().get(res).get("cleanup.policy"));
            List<Integer> ids = cluster.nodes().get().stream().map(Node::id).toList();
            assertFalse(admin.describeLogDirs(ids).allDescriptions().get().isEmpty());
            // Without an authorizer Kafka 4.4 reports every cluster operation.
            assertEquals(Set.of(AclOperation.DESCRIBE, AclOperation.CLUSTER_ACTION, AclOperation.IDEMPOTENT_WRITE,
                    AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS, AclOperation.CREATE, AclOperation.ALTER_CONFIGS),
                    admin.describeCluster(new DescribeClusterOptions().includeAuthorizedOperations(true))
                            .authorizedOperations().get());
            assertTrue(admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get().isEmpty());
        }
    }

    @Test
    void uiCallsWithTheStandardAuthorizer() throws Exception {
        String topic = Broker.topic("java-ui"), hidden = Broker.topic("java-ui-hidden"), group = Broker.topic("java-ui-g");
        try (Admin admin = secured("admin"); Admin alice = secured("alice")) {
            // This broker is the test's alone: start from no ACLs (a rerun finds the last run's).
            admin.deleteAcls(List.of(AclBindingFilter.ANY)).all().get();
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1), new NewTopic(hidden, 1, (short) 1))).all().get();
            AclBinding aliceRead = new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                    new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
            AclBinding bobPrefix = new AclBinding(new ResourcePattern(ResourceType.TOPIC, "java-ui", PatternType.PREFIXED),
                    new AccessControlEntry("User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW));
            AclBinding bobGroup = new AclBinding(new ResourcePattern(ResourceType.GROUP, group, PatternType.LITERAL),
                    new AccessControlEntry("User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW));
            admin.createAcls(List.of(aliceRead, bobPrefix, bobGroup)).all().get();

            // The super user: Kafdrop's /acl page and AKHQ's ACL list show every binding.
            // Kafka's authorizer learns of new ACLs from the metadata log a
            // moment after createAcls returns: wait until they show (15 s at most).
            Set<String> all = rows(List.of(aliceRead, bobPrefix, bobGroup));
            long deadline = System.nanoTime() + 15_000_000_000L;
            while (!all.equals(rows(admin.describeAcls(AclBindingFilter.ANY).values().get())) && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertEquals(all, rows(admin.describeAcls(KAFDROP_ALL).values().get()));
            assertEquals(all, rows(admin.describeAcls(AclBindingFilter.ANY).values().get()));
            // AKHQ's topic ACL tab: PatternType.ANY matches the name exactly,
            // so bob's prefixed binding is not the topic's.
            assertEquals(rows(List.of(aliceRead)), rows(admin.describeAcls(akhqResource(ResourceType.TOPIC, topic)).values().get()));
            assertEquals(rows(List.of(bobGroup)), rows(admin.describeAcls(akhqResource(ResourceType.GROUP, group)).values().get()));
            assertEquals(rows(List.of(bobPrefix, bobGroup)), rows(admin.describeAcls(akhqPrincipal("User:bob")).values().get()));
            Set<AclOperation> clusterOps = admin.describeCluster(new DescribeClusterOptions().includeAuthorizedOperations(true))
                    .authorizedOperations().get();
            assertTrue(clusterOps.containsAll(Set.of(AclOperation.DESCRIBE, AclOperation.ALTER, AclOperation.CREATE)), clusterOps.toString());
            assertTrue(admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get().isEmpty());

            // alice: the ACL pages are refused with Kafka's error, which AKHQ
            // reads as "no ACLs" and Kafdrop shows as an error (as with Kafka).
            for (AclBindingFilter f : List.of(KAFDROP_ALL, AclBindingFilter.ANY, akhqResource(ResourceType.TOPIC, topic),
                    akhqPrincipal("User:alice"))) {
                assertCause(ClusterAuthorizationException.class, () -> alice.describeAcls(f).values().get());
            }
            DescribeClusterResult cluster = alice.describeCluster(new DescribeClusterOptions().includeAuthorizedOperations(true));
            assertNotNull(cluster.clusterId().get());
            assertFalse(cluster.nodes().get().isEmpty());
            assertEquals(Set.of(), cluster.authorizedOperations().get());
            // She sees only the topic she may read, with READ and the DESCRIBE it implies.
            assertTrue(admin.listTopics().names().get().containsAll(Set.of(topic, hidden)));
            assertEquals(Set.of(topic), alice.listTopics(new ListTopicsOptions().listInternal(true)).names().get());
            Map<String, TopicDescription> described = alice.describeTopics(List.of(topic),
                    new DescribeTopicsOptions().includeAuthorizedOperations(true)).allTopicNames().get();
            assertEquals(Set.of(AclOperation.READ, AclOperation.DESCRIBE), described.get(topic).authorizedOperations());
            assertCause(TopicAuthorizationException.class, () -> alice.describeTopics(List.of(hidden)).allTopicNames().get());
            // Kafdrop describeTopicConfigs and AKHQ describeConfigs: READ does
            // not imply DESCRIBE_CONFIGS.
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            assertCause(TopicAuthorizationException.class, () -> alice.describeConfigs(List.of(res)).all().get());
            // AKHQ describeLogDirs; Kafdrop listConsumerGroupOffsetsIfAuthorized.
            List<Integer> ids = cluster.nodes().get().stream().map(Node::id).toList();
            assertCause(ClusterAuthorizationException.class, () -> alice.describeLogDirs(ids).allDescriptions().get());
            assertCause(GroupAuthorizationException.class,
                    () -> alice.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get());
            assertCause(ClusterAuthorizationException.class,
                    () -> alice.describeClientQuotas(ClientQuotaFilter.all()).entities().get());
        }
    }
}
