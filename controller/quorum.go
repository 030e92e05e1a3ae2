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
	"strconv"
	"strings"

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
	id := uint64(c.etcd.Server.MemberID())
	if _, err := c.client.Put(ctx, c.ks.etcdMember(id), strconv.Itoa(int(c.cfg.NodeID))); err != nil {
		return fmt.Errorf("controller: recording the embedded etcd member: %w", err)
	}
	return nil
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
