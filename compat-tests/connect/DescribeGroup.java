// Describes classic groups with the Admin client (DescribeGroups, KIP-1043's
// describeClassicGroups), which kafka-consumer-groups refuses for a group whose
// protocol type is not "consumer". Run as a single-file program:
//   java -cp 'bench/kafka/lib/*' DescribeGroup.java HOST:PORT GROUP...
// Prints per group: group=ID state=STATE protocol=TYPE protocolData=NAME
// members=N (ClassicGroupDescription's protocol is the protocol type, e.g.
// "connect", and its protocolData the protocol the group chose, e.g.
// "sessioned"), then one line per member: member clientId=ID host=HOST.
import java.util.Arrays;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ClassicGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;

public class DescribeGroup {
    public static void main(String[] args) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]))) {
            Map<String, ClassicGroupDescription> groups = admin
                .describeClassicGroups(Arrays.asList(args).subList(1, args.length)).all().get();
            for (ClassicGroupDescription g : groups.values()) {
                System.out.printf("group=%s state=%s protocol=%s protocolData=%s members=%d%n",
                    g.groupId(), g.state(), g.protocol(), g.protocolData(), g.members().size());
                for (MemberDescription m : g.members()) {
                    System.out.printf("member clientId=%s host=%s%n", m.clientId(), m.host());
                }
            }
        }
    }
}
