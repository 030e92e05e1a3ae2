package cluster

// The kill -9 test with Kafka's StandardAuthorizer on every broker (run by
// compat-tests/cluster-secure/run.sh beside the plain SASL_SSL one). Three
// principals authenticate with SASL/PLAIN: User:admin, the only super user,
// creates the topics and the ACLs through the admin API (what Kafka users
// do: some principal must be able to create the first ACL); User:broker,
// what each broker authenticates as to the others, is no super user and
// replicates because an ACL gives it CLUSTER_ACTION on the cluster;
// User:client, the test's producer and reader, holds READ and WRITE on its
// topic and nothing else.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	brokerUser, brokerPassword = "broker", "broker-secret"
	clientUser, clientPassword = "client", "client-secret"
	// probeTopic has one replica, on broker 1, so that the fetches the
	// test sends as a follower change no replicated partition's state.
	probeTopic = "authz-probe"
)

// authzSettings turn the StandardAuthorizer on with User:admin as the only
// super user, and make the inter-broker listener's JAAS config log in as
// User:broker (the PLAIN users: admin, broker, client).
func authzSettings() map[string]string {
	s := defaultSettings()
	s["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	s["super.users"] = "User:admin"
	s["allow.everyone.if.no.acl.found"] = "false"
	s["listener.name.sasl_ssl.plain.sasl.jaas.config"] = fmt.Sprintf(
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="%s" password="%s" user_admin="admin-secret" user_%s="%s" user_%s="%s";`,
		brokerUser, brokerPassword, brokerUser, brokerPassword, clientUser, clientPassword)
	return s
}

// TestKill9WithAuthorizer: TestKill9EachBrokerWhileProducing on brokers
// that authorize every request, one another's replica fetches included.
// Before the workload it checks that the authorizer decides: a follower
// Fetch from User:broker is refused until the CLUSTER_ACTION ACL exists and
// accepted after; one from User:client (READ on the topic, no
// CLUSTER_ACTION) is refused throughout; User:client may not see a topic it
// holds no ACL on.
func TestKill9WithAuthorizer(t *testing.T) {
	needCluster(t)
	if !secure() {
		t.Skip("needs SASL principals: runs in the secured variant (compat-tests/cluster-secure/run.sh, make compat-cluster-secure)")
	}
	const name = "produce acks=all and read back across kill -9 and restart of each broker, StandardAuthorizer on, brokers holding CLUSTER_ACTION through an ACL"
	defer func() { addRow(name, !t.Failed()) }()

	c := startCluster(t, authzSettings())
	res := &failoverResult{Topic: killTopic, Partitions: killPartitions, LongestGap: map[int32]ms{}}
	defer func() {
		results.mu.Lock()
		results.FailoverAuthz = res
		results.mu.Unlock()
	}()
	c.CreateTopic(probeTopic, 1, 1, [][]int32{{1}}, nil)

	clientACLs := kadm.NewACLs().Allow("User:"+clientUser).AllowHosts("*").
		Topics(killTopic).Operations(kadm.OpRead, kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	probeACLs := kadm.NewACLs().Allow("User:" + clientUser).AllowHosts("*").
		Topics(probeTopic).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	c.createACLs(clientACLs, probeACLs)
	c.waitACLs(3)

	brokerCl := c.userClient(1, brokerUser, brokerPassword)
	clientCl := c.userClient(1, clientUser, clientPassword)
	if code := probeFetch(t, c, clientCl, -1); code != 0 {
		t.Fatalf("User:client's consumer Fetch of %s (READ granted): %s, want no error", probeTopic, codeName(code))
	}
	if code := probeFetch(t, c, brokerCl, 2); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("User:broker's follower Fetch before any ACL names it: %s, want TOPIC_AUTHORIZATION_FAILED (is it a super user?)", codeName(code))
	}
	if code := clientMetadataCode(t, clientCl, "reliability-unnamed"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("User:client's Metadata of a topic it holds no ACL on: %s, want TOPIC_AUTHORIZATION_FAILED", codeName(code))
	}

	// The brokers' ACLs: CLUSTER_ACTION on the cluster (replica Fetch,
	// OffsetForLeaderEpoch, WriteTxnMarkers, AddPartitionsToTxn from a
	// broker), and DESCRIBE on every topic, which Kafka's ListOffsets asks
	// of a follower too (it lists the leader's log start offset after
	// OFFSET_OUT_OF_RANGE).
	brokerACLs := kadm.NewACLs().Allow("User:" + brokerUser).AllowHosts("*").
		Clusters().Operations(kadm.OpClusterAction).ResourcePatternType(kadm.ACLPatternLiteral)
	brokerTopics := kadm.NewACLs().Allow("User:" + brokerUser).AllowHosts("*").
		Topics("*").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	c.createACLs(brokerACLs, brokerTopics)
	c.waitACLs(5)
	if code := probeFetch(t, c, brokerCl, 2); code == kerr.TopicAuthorizationFailed.Code || code == kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("User:broker's follower Fetch with CLUSTER_ACTION granted: %s", codeName(code))
	}
	if code := probeFetch(t, c, clientCl, 2); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("User:client's follower Fetch (READ, no CLUSTER_ACTION): %s, want TOPIC_AUTHORIZATION_FAILED", codeName(code))
	}
	brokerCl.Close()
	clientCl.Close()

	c.CreateTopic(killTopic, killPartitions, 3, nil, map[string]string{"min.insync.replicas": "2"})
	c.workload = clientOptsAs(clientUser, clientPassword)
	killEachBroker(t, c, res)
}

// createACLs creates the builders' bindings as User:admin and fails the
// test on any refusal.
func (c *cluster) createACLs(bs ...*kadm.ACLBuilder) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.Admin[1])
	for _, b := range bs {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			c.t.Fatalf("CreateAcls: %v", err)
		}
		for _, r := range res {
			if r.Err != nil {
				c.t.Fatalf("CreateAcls %s %v %s %s: %v %s", r.Principal, r.Operation, r.Type, r.Name, r.Err, r.ErrMessage)
			}
		}
	}
}

// waitACLs waits until every broker's DescribeAcls lists n bindings (the
// ACLs reached its cache, what it authorizes with).
func (c *cluster) waitACLs(n int) {
	c.t.Helper()
	c.Eventually(15*time.Second, fmt.Sprintf("every broker lists %d ACLs", n), func() error {
		for _, nd := range c.Nodes {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType = kmsg.ACLResourceTypeAny
			req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
			req.Operation = kmsg.ACLOperationAny
			req.PermissionType = kmsg.ACLPermissionTypeAny
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			raw, err := c.Admin[nd.ID].SeedBrokers()[0].Request(ctx, req)
			cancel()
			if err != nil {
				return err
			}
			resp := raw.(*kmsg.DescribeACLsResponse)
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				return fmt.Errorf("broker %d: %v", nd.ID, err)
			}
			got := 0
			for _, r := range resp.Resources {
				got += len(r.ACLs)
			}
			if got != n {
				return fmt.Errorf("broker %d lists %d ACLs", nd.ID, got)
			}
		}
		return nil
	})
}

// userClient is a client of broker id alone authenticating as user.
func (c *cluster) userClient(id int32, user, password string) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append(clientOptsAs(user, password), kgo.SeedBrokers(c.Node(id).Addr),
		kgo.RetryTimeout(time.Second), kgo.DialTimeout(time.Second))...)
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}

// probeFetch sends probeTopic's partition 0 leader (broker 1, cl's seed) a
// Fetch as replica (-1: a consumer) and returns the partition's error code.
// The client picks the version: the replica id and the topic are set both
// ways (by name and id up to v12 and from v13; the replica id at the top up
// to v14, in ReplicaState from v15).
func probeFetch(t *testing.T, c *cluster, cl *kgo.Client, replica int32) int16 {
	t.Helper()
	m, err := c.Metadata(1, probeTopic)
	if err != nil || len(m.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", probeTopic, err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = replica
	req.ReplicaState.ID = replica
	req.MaxWaitMillis = 0
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = probeTopic, m.Topics[0].TopicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("Fetch as replica %d: %v", replica, err)
	}
	resp := raw.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("Fetch as replica %d: %d topics in the response", replica, len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// clientMetadataCode is the error code of topic in cl's seed broker's
// Metadata answer (auto-creation off).
func clientMetadataCode(t *testing.T, cl *kgo.Client, topic string) int16 {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	resp := raw.(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 {
		t.Fatalf("Metadata of %s: %d topics answered", topic, len(resp.Topics))
	}
	return resp.Topics[0].ErrorCode
}
