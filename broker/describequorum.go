package broker

// DescribeQuorum (key 55); versions: see the registration below.
//
// `kafka-metadata-quorum describe --status / --replication`. Kafka's broker
// forwards it to the controller, whose raft leader describes the
// __cluster_metadata partition; Strait's metadata lives in etcd, so the
// broker answers itself with the etcd cluster (controller/quorum.go):
//
//   - voters: the etcd members, each with the node id of the broker whose
//     embedded member it is (a member of an external etcd, which has none:
//     the low 31 bits of its member id); observers: the learners, and the
//     registered brokers with no member of their own (every broker with an
//     external etcd), as Kafka lists its brokers;
//   - leader: the etcd leader; leader epoch: its raft term; high watermark
//     and each member's log end offset: raft indexes. A broker learns the
//     indexes of the other brokers' members by asking them (the same
//     request with the tag quorumLocalTag: "your own member only"); a
//     member no live broker answers for has -1, as Kafka's unknown offset;
//   - timestamps: now for the leader (as Kafka) and for a member that
//     answered, its caught-up time now when its index reached the high
//     watermark; -1 otherwise;
//   - v2: the directory id carries the etcd member id (its last 8 bytes),
//     the nodes' listeners are the members' peer URLs (listener ETCD_PEER).
//
// As Kafka: DESCRIBE on the CLUSTER, else CLUSTER_AUTHORIZATION_FAILED at
// the top; anything but the one partition __cluster_metadata-0:
// UNKNOWN_TOPIC_OR_PARTITION on each partition named; no leader:
// NOT_LEADER_OR_FOLLOWER on the partition.

import (
	"context"
	"encoding/binary"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.DescribeQuorum, 0, 2, handleDescribeQuorum) }

const (
	metadataTopic = "__cluster_metadata"
	// quorumLocalTag marks a DescribeQuorum one broker sends another to
	// learn the raft indexes of that broker's own etcd member: a tagged
	// field number Kafka's schema does not use, which Kafka ignores.
	quorumLocalTag = 0x5374
	// quorumPeerTimeout bounds the wait for the other brokers' members.
	quorumPeerTimeout = 2 * time.Second
)

// memberState is what one member's raft indexes are known to be.
type memberState struct {
	index   int64 // committed index the member knows: its log end
	applied int64
	known   bool
}

func handleDescribeQuorum(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeQuorumRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if !c.authorizeCluster(acl.OpDescribe) { // authorize.go
		msg := kerr.ClusterAuthorizationFailed.Description
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		x.respond(resp)
		return
	}
	if !(len(req.Topics) == 1 && req.Topics[0].Topic == metadataTopic &&
		len(req.Topics[0].Partitions) == 1 && req.Topics[0].Partitions[0].Partition == 0) {
		msg := kerr.UnknownTopicOrPartition.Description
		for _, rt := range req.Topics {
			t := kmsg.NewDescribeQuorumResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewDescribeQuorumResponseTopicPartition()
				p.Partition, p.ErrorCode, p.ErrorMessage = rp.Partition, kerr.UnknownTopicOrPartition.Code, &msg
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		x.respond(resp)
		return
	}
	ctx, cancel := requestContext(0)
	defer cancel()
	if hasTag(req.UnknownTags, quorumLocalTag) {
		x.respond(localQuorumAnswer(ctx, s, req))
		return
	}
	q, err := s.ctrl.Quorum(ctx)
	t := kmsg.NewDescribeQuorumResponseTopic()
	t.Topic = metadataTopic
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	if err != nil || q.Leader == 0 {
		code := kerr.NotLeaderForPartition.Code
		if err != nil {
			code, _ = s.apiErrorFields(err, "DescribeQuorum", "")
		}
		var msg string
		if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
			msg = ke.Description
		}
		p.ErrorCode, p.ErrorMessage = code, &msg
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		x.respond(resp)
		return
	}
	states := memberStates(ctx, s, q)
	now := time.Now().UnixMilli()
	p.LeaderID = -1
	p.LeaderEpoch = int32(min(q.Term, 1<<31-1))
	p.HighWatermark = -1
	if st := states[q.Leader]; st.known {
		p.HighWatermark = st.index
	}
	owned := map[int32]bool{}
	for _, m := range q.Members {
		id := quorumReplicaID(m)
		owned[id] = true
		if m.ID == q.Leader {
			p.LeaderID = id
		}
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID = id
		rs.ReplicaDirectoryID = memberDirectoryID(m.ID)
		rs.LogEndOffset, rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = -1, -1, -1
		if st := states[m.ID]; st.known {
			rs.LogEndOffset, rs.LastFetchTimestamp = st.index, now
			if p.HighWatermark >= 0 && st.index >= p.HighWatermark {
				rs.LastCaughtUpTimestamp = now
			}
		}
		if m.Learner {
			p.Observers = append(p.Observers, rs)
			continue
		}
		p.CurrentVoters = append(p.CurrentVoters, rs)
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = id
		for _, raw := range m.PeerURLs {
			if l, ok := peerListener(raw); ok {
				n.Listeners = append(n.Listeners, l)
			}
		}
		resp.Nodes = append(resp.Nodes, n)
	}
	for _, b := range s.ctrl.Brokers() {
		if owned[b.NodeID] {
			continue
		}
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID = b.NodeID
		rs.LogEndOffset, rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = -1, -1, -1
		p.Observers = append(p.Observers, rs)
	}
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	x.respond(resp)
}

// localQuorumAnswer is the answer to another broker's tagged request: this
// broker's own member as the one voter, its committed index as the log end
// offset and its applied index as the high watermark.
func localQuorumAnswer(ctx context.Context, s *Server, req *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	t := kmsg.NewDescribeQuorumResponseTopic()
	t.Topic = metadataTopic
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID, p.HighWatermark = -1, -1
	if id, index, applied, ok := s.ctrl.LocalMember(ctx); ok {
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID, rs.ReplicaDirectoryID, rs.LogEndOffset = s.cfg.NodeID, memberDirectoryID(id), int64(index)
		p.CurrentVoters = append(p.CurrentVoters, rs)
		p.HighWatermark = int64(applied)
	}
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp
}

// memberStates learns the raft indexes of the members: this broker's own
// (or the external endpoint's) from q, the others' from the live brokers
// whose embedded members they are, asked in parallel within
// quorumPeerTimeout. A broker that does not answer leaves its member
// unknown.
func memberStates(ctx context.Context, s *Server, q controller.Quorum) map[uint64]memberState {
	states := map[uint64]memberState{q.Local: {index: int64(q.Index), applied: int64(q.Committed), known: true}}
	live := map[int32]bool{}
	for _, b := range s.ctrl.Brokers() {
		live[b.NodeID] = true
	}
	ctx, cancel := context.WithTimeout(ctx, quorumPeerTimeout)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range q.Members {
		if m.ID == q.Local || m.NodeID < 0 || m.NodeID == s.cfg.NodeID || !live[m.NodeID] {
			continue
		}
		wg.Add(1)
		go func(m controller.QuorumMember) {
			defer wg.Done()
			req := kmsg.NewPtrDescribeQuorumRequest()
			rt := kmsg.NewDescribeQuorumRequestTopic()
			rt.Topic = metadataTopic
			rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
			req.Topics = append(req.Topics, rt)
			req.UnknownTags.Set(quorumLocalTag, nil)
			kresp, err := s.sendToBroker(ctx, m.NodeID, req)
			if err != nil {
				return
			}
			r, ok := kresp.(*kmsg.DescribeQuorumResponse)
			if !ok || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
				return
			}
			rp := r.Topics[0].Partitions[0]
			if len(rp.CurrentVoters) != 1 || r.Version >= 2 && rp.CurrentVoters[0].ReplicaDirectoryID != memberDirectoryID(m.ID) {
				return // not (or no longer) that member's broker
			}
			mu.Lock()
			states[m.ID] = memberState{index: rp.CurrentVoters[0].LogEndOffset, applied: rp.HighWatermark, known: true}
			mu.Unlock()
		}(m)
	}
	wg.Wait()
	return states
}

// quorumReplicaID is the replica id a member is listed with.
func quorumReplicaID(m controller.QuorumMember) int32 {
	if m.NodeID >= 0 {
		return m.NodeID
	}
	return int32(m.ID & (1<<31 - 1))
}

// memberDirectoryID is the directory id a member is listed with: its
// member id in the last 8 bytes.
func memberDirectoryID(id uint64) [16]byte {
	var d [16]byte
	binary.BigEndian.PutUint64(d[8:], id)
	return d
}

// peerListener is a member's peer URL as a DescribeQuorum listener.
func peerListener(raw string) (kmsg.DescribeQuorumResponseNodeListener, bool) {
	l := kmsg.NewDescribeQuorumResponseNodeListener()
	u, err := url.Parse(raw)
	if err != nil {
		return l, false
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return l, false
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 { // 0: a member without peers, reachable by none
		return l, false
	}
	l.Name, l.Host, l.Port = "ETCD_PEER", host, uint16(n)
	return l, true
}

// hasTag reports whether tags holds the tagged field key.
func hasTag(tags kmsg.Tags, key uint32) bool {
	found := false
	tags.Each(func(k uint32, _ []byte) { found = found || k == key })
	return found
}
