package strait.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;

/**
 * AdminClient's ACL calls against a broker without authorizer.class.name
 * (this suite's): each fails with SecurityDisabledException and Kafka's
 * message, as the ACL pages of AKHQ, Kafdrop and Redpanda Console expect.
 */
class AclTest {
    @Test
    void aclCallsWithoutAnAuthorizer() throws Exception {
        AclBinding binding = new AclBinding(new ResourcePattern(ResourceType.TOPIC, "java-acl", PatternType.LITERAL),
                new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
        try (Admin admin = Admin.create(Broker.props())) {
            ExecutionException describe = assertThrows(ExecutionException.class,
                    () -> admin.describeAcls(AclBindingFilter.ANY).values().get());
            assertInstanceOf(SecurityDisabledException.class, describe.getCause());
            assertEquals("No Authorizer is configured on the broker", describe.getCause().getMessage());
            ExecutionException create = assertThrows(ExecutionException.class,
                    () -> admin.createAcls(List.of(binding)).all().get());
            assertInstanceOf(SecurityDisabledException.class, create.getCause());
            assertEquals("No Authorizer is configured.", create.getCause().getMessage());
            ExecutionException delete = assertThrows(ExecutionException.class,
                    () -> admin.deleteAcls(List.of(binding.toFilter())).all().get());
            assertInstanceOf(SecurityDisabledException.class, delete.getCause());
        }
    }
}
