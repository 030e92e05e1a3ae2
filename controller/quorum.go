package controller

// The etcd cluster as Kafka's metadata quorum: what DescribeQuorum,
// UnregisterBroker and `kafka-metadata-quorum` see. etcd's members are the
// voters (learners the observers), its leader the quorum leader, its raft
// term the leader epoch and its raft indexes the log end offsets.
//
// Which broker a member belongs to is recorded once per embedded member in
// <prefix>/etcd_members/<member id, hex> = <node id> (without a lease: it
// names the member after the broker stopped too); members of an external
// etcd have no broker.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

const etcdMembersSegment = "etcd_members/"

func (k keyspace) etcdMembers() string { return k.root() + etcdMembersSegment }
func (k keyspace) etcdMember(id uint64) string {
	return k.etcdMembers() + strconv.FormatUint(id, 16)
}

// ErrBrokerNotRegistered is UnregisterBroker's answer for a node id with no
// registration.
var ErrBrokerNotRegistered = errors.New("controller: broker not registered")

// QuorumMember is one etcd member.
type QuorumMember struct {
	ID       uint64 // etcd's member id
	Name     string
	NodeID   int32 // the broker whose embedded member it is, -1 if none is known
	PeerURLs []string
	Learner  bool
}

// Quorum is the etcd cluster as the member this controller talks to sees it.
type Quorum struct {
	Members []QuorumMember // in etcd's order
	Leader  uint64         // member id of the leader, 0 if none
	Term    uint64         // the leader's raft term
	// Local is the member the controller's requests went to (its embedded
	// member, or the external endpoint that answered), Index its raft
	// index (log end) and Committed its applied index, which the leader
	// has committed.
	Local     uint64
	Index     uint64
	Committed uint64
	Embedded  bool
}

// LocalMember returns the raft state of this broker's own embedded
// member: its id, raft index and applied index, and false with an external
// etcd.
func (c *Controller) LocalMember(ctx context.Context) (id, index, applied uint64, ok bool) {
	if c.etcd == nil {
		return 0, 0, 0, false
	}
	st, err := c.client.Status(ctx, "")
	if err != nil {
		return 0, 0, 0, false
	}
	return st.Header.MemberId, st.RaftIndex, st.RaftAppliedIndex, true
}

// Quorum returns the members of the etcd cluster, its leader and term, and
// the raft indexes of the member this controller talks to.
func (c *Controller) Quorum(ctx context.Context) (Quorum, error) {
	if !c.running() {
		return Quorum{}, ErrNotStarted
	}
	q := Quorum{Embedded: c.etcd != nil}
	list, err := c.client.MemberList(ctx)
	if err != nil {
		return q, fmt.Errorf("controller: listing the etcd members: %w", err)
	}
	var st *clientv3.StatusResponse
	if c.etcd != nil {
		st, err = c.client.Status(ctx, "") // in process: always the own member
	} else {
		for _, ep := range c.client.Endpoints() {
			if st, err = c.client.Status(ctx, ep); err == nil {
				break
			}
		}
	}
	if err != nil {
		return q, fmt.Errorf("controller: reading the etcd status: %w", err)
	}
	if st == nil {
		return q, errors.New("controller: no etcd endpoint")
	}
	q.Leader, q.Term = st.Leader, st.RaftTerm
	q.Local, q.Index, q.Committed = st.Header.MemberId, st.RaftIndex, st.RaftAppliedIndex
	nodes, err := c.client.Get(ctx, c.ks.etcdMembers(), clientv3.WithPrefix())
	if err != nil {
		return q, fmt.Errorf("controller: reading the etcd members' brokers: %w", err)
	}
	owner := map[uint64]int32{}
	for _, kv := range nodes.Kvs {
		id, err1 := strconv.ParseUint(strings.TrimPrefix(string(kv.Key), c.ks.etcdMembers()), 16, 64)
		node, err2 := strconv.ParseInt(string(kv.Value), 10, 32)
		if err1 == nil && err2 == nil {
			owner[id] = int32(node)
		}
	}
	for _, m := range list.Members {
		qm := QuorumMember{ID: m.ID, Name: m.Name, NodeID: -1, PeerURLs: m.PeerURLs, Learner: m.IsLearner}
		if node, ok := owner[m.ID]; ok {
			qm.NodeID = node
		}
		q.Members = append(q.Members, qm)
	}
	return q, nil
}

// recordEmbeddedMember writes which broker the embedded member belongs to.
func (c *Controller) recordEmbeddedMember(ctx context.Context) error {
	if c.etcd == nil {
		return nil
	}
	return c.recordMember(ctx, uint64(c.etcd.Server.MemberID()), c.cfg.NodeID)
}

// UnregisterBroker removes broker id's registration as Kafka's controller
// does (ReplicationControlManager.unregisterBroker): its lease is revoked,
// so the active controller moves its leaderships away and removes it from
// the ISRs. A broker still running registers again (as Kafka's does on its
// next heartbeat); a stopped one stays away. ErrBrokerNotRegistered when no
// broker has that id.
func (c *Controller) UnregisterBroker(ctx context.Context, id int32) error {
	if !c.running() {
		return ErrNotStarted
	}
	resp, err := c.client.Get(ctx, c.ks.broker(id))
	if err != nil {
		return fmt.Errorf("controller: reading broker %d's registration: %w", id, err)
	}
	if len(resp.Kvs) == 0 {
		return ErrBrokerNotRegistered
	}
	kv := resp.Kvs[0]
	if kv.Lease == 0 {
		_, err = c.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(string(kv.Key))).Commit()
	} else {
		_, err = c.client.Revoke(ctx, clientv3.LeaseID(kv.Lease))
	}
	if err != nil {
		return fmt.Errorf("controller: unregistering broker %d: %w", id, err)
	}
	c.log.Info("unregistered a broker", "node.id", id)
	return nil
}

// ErrExternalEtcd refuses a membership change of an etcd Strait does not
// embed: its members are not Strait's to change.
var ErrExternalEtcd = errors.New("controller: the etcd cluster is external (etcd.endpoints)")

// Membership change outcomes the broker maps onto Kafka's errors.
var (
	ErrMemberNotFound     = errors.New("controller: no such etcd member")
	ErrMemberExists       = errors.New("controller: an etcd member with that peer URL exists")
	ErrLearnerNotReady    = errors.New("controller: the learner is not in sync with the leader yet")
	ErrMemberAddedLearner = errors.New("controller: the member was added as a learner; start it, then promote it")
	// ErrUnhealthy: etcd refuses a change while a voter is not connected
	// or was connected too briefly (its strict reconfiguration check).
	ErrUnhealthy = errors.New("controller: the etcd cluster is not healthy enough for a membership change")
)

// AddVoter grows the embedded etcd cluster by the member at peerURL for
// broker nodeID, in etcd's two steps: a member not yet in the cluster is
// added as a learner (ErrMemberAddedLearner: the broker is then started
// with etcd.initial.cluster.state=existing and catches up), and a learner
// at that URL is promoted to voter once in sync (ErrLearnerNotReady
// before). The member is recorded as nodeID's.
func (c *Controller) AddVoter(ctx context.Context, nodeID int32, peerURL string) error {
	if !c.running() {
		return ErrNotStarted
	}
	if c.etcd == nil {
		return ErrExternalEtcd
	}
	list, err := c.client.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("controller: listing the etcd members: %w", err)
	}
	for _, m := range list.Members {
		if !slices.Contains(m.PeerURLs, peerURL) {
			continue
		}
		if !m.IsLearner {
			return ErrMemberExists
		}
		if _, err := c.client.MemberPromote(ctx, m.ID); err != nil {
			if errors.Is(err, rpctypes.ErrMemberLearnerNotReady) {
				return ErrLearnerNotReady
			}
			return fmt.Errorf("controller: promoting etcd member %x: %w", m.ID, err)
		}
		c.log.Info("promoted an etcd learner to voter", "member", fmt.Sprintf("%x", m.ID), "node.id", nodeID)
		return c.recordMember(ctx, m.ID, nodeID)
	}
	resp, err := c.client.MemberAddAsLearner(ctx, []string{peerURL})
	if err != nil {
		if errors.Is(err, rpctypes.ErrPeerURLExist) {
			return ErrMemberExists
		}
		if errors.Is(err, rpctypes.ErrUnhealthy) {
			return ErrUnhealthy
		}
		return fmt.Errorf("controller: adding etcd member %s: %w", peerURL, err)
	}
	c.log.Info("added an etcd learner", "member", fmt.Sprintf("%x", resp.Member.ID), "peer.url", peerURL, "node.id", nodeID)
	if err := c.recordMember(ctx, resp.Member.ID, nodeID); err != nil {
		return err
	}
	return ErrMemberAddedLearner
}

// RemoveMember removes the etcd member id (voter or learner) from the
// embedded etcd cluster.
func (c *Controller) RemoveMember(ctx context.Context, id uint64) error {
	if !c.running() {
		return ErrNotStarted
	}
	if c.etcd == nil {
		return ErrExternalEtcd
	}
	if _, err := c.client.MemberRemove(ctx, id); err != nil {
		if errors.Is(err, rpctypes.ErrMemberNotFound) {
			return ErrMemberNotFound
		}
		if errors.Is(err, rpctypes.ErrUnhealthy) {
			return ErrUnhealthy
		}
		return fmt.Errorf("controller: removing etcd member %x: %w", id, err)
	}
	c.log.Info("removed an etcd member", "member", fmt.Sprintf("%x", id))
	// Its record stays, as a Kafka controller's registration outlives its
	// removal from the voters, until UnregisterController.
	return nil
}

// ErrControllerNotRegistered is UnregisterController's answer for a node
// id no etcd member record names.
var ErrControllerNotRegistered = errors.New("controller: controller not registered")

// UnregisterController removes the records naming broker id as an etcd
// member's (Kafka's controller registrations) whose member has left the
// etcd cluster. The record of a member still in the cluster stays, as a
// running Kafka controller registers again at once.
// ErrControllerNotRegistered when no record names id.
func (c *Controller) UnregisterController(ctx context.Context, id int32) error {
	if !c.running() {
		return ErrNotStarted
	}
	recs, err := c.client.Get(ctx, c.ks.etcdMembers(), clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("controller: reading the etcd members' brokers: %w", err)
	}
	list, err := c.client.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("controller: listing the etcd members: %w", err)
	}
	current := map[string]bool{}
	for _, m := range list.Members {
		current[c.ks.etcdMember(m.ID)] = true
	}
	found := false
	for _, kv := range recs.Kvs {
		if string(kv.Value) != strconv.Itoa(int(id)) {
			continue
		}
		found = true
		if current[string(kv.Key)] {
			continue
		}
		if _, err := c.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(string(kv.Key))).Commit(); err != nil {
			return fmt.Errorf("controller: unregistering controller %d: %w", id, err)
		}
	}
	if !found {
		return ErrControllerNotRegistered
	}
	return nil
}

func (c *Controller) recordMember(ctx context.Context, id uint64, nodeID int32) error {
	if _, err := c.client.Put(ctx, c.ks.etcdMember(id), strconv.Itoa(int(nodeID))); err != nil {
		return fmt.Errorf("controller: recording etcd member %x: %w", id, err)
	}
	return nil
}
