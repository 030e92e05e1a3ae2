package broker

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeQuorum sends DescribeQuorum for __cluster_metadata-0 to srv,
// again while the etcd cluster has no leader (an election after a member
// stopped), for at most 20 seconds.
func describeQuorum(t *testing.T, srv *Server) *kmsg.DescribeQuorumResponse {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		kresp, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := kresp.(*kmsg.DescribeQuorumResponse)
		if resp.ErrorCode == 0 && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
			code := resp.Topics[0].Partitions[0].ErrorCode
			if code == 0 {
				return resp
			}
			if code == kerr.NotLeaderForPartition.Code && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
		}
		t.Fatalf("describe quorum: %+v", resp)
	}
}

// TestDescribeQuorumEtcdCluster: three brokers whose embedded members form
// one etcd cluster are the three voters, the etcd leader's broker is the
// leader, and each member's log end offset is learned from its broker; a
// stopped broker's member stays a voter with an unknown log end offset.
func TestDescribeQuorumEtcdCluster(t *testing.T) {
	srvs, cfgs := startEtcdCluster(t, 3)
	defer func() {
		for _, s := range srvs {
			s.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	q, err := srvs[2].ctrl.Quorum(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader := int32(-1)
	for _, m := range q.Members {
		if m.ID == q.Leader {
			leader = m.NodeID
		}
	}
	resp := describeQuorum(t, srvs[2])
	p := resp.Topics[0].Partitions[0]
	if resp.Topics[0].Topic != "__cluster_metadata" || p.LeaderID != leader || leader < 1 || p.LeaderEpoch < 1 ||
		p.HighWatermark <= 0 || len(p.Observers) != 0 {
		t.Fatalf("partition: %+v (etcd leader's broker %d)", p, leader)
	}
	var ids []int32
	for _, v := range p.CurrentVoters {
		ids = append(ids, v.ReplicaID)
		if v.LogEndOffset <= 0 || v.LastFetchTimestamp <= 0 {
			t.Errorf("voter %d: %+v", v.ReplicaID, v)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []int32{1, 2, 3}) {
		t.Fatalf("voters %v", ids)
	}
	if len(resp.Nodes) != 3 {
		t.Fatalf("nodes: %+v", resp.Nodes)
	}
	for _, n := range resp.Nodes {
		peer, err := url.Parse(cfgs[n.NodeID-1].Etcd.ListenPeerURLs[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Listeners) != 1 || n.Listeners[0].Name != "ETCD_PEER" || strconv.Itoa(int(n.Listeners[0].Port)) != peer.Port() {
			t.Errorf("node %d: %+v, peer URL %s", n.NodeID, n.Listeners, peer)
		}
	}

	// Broker 1 stops: its member stays a voter, its offsets unknown.
	if err := srvs[0].Close(); err != nil {
		t.Fatal(err)
	}
	p = describeQuorum(t, srvs[2]).Topics[0].Partitions[0]
	for _, v := range p.CurrentVoters {
		if stopped := v.ReplicaID == 1; stopped != (v.LogEndOffset == -1) {
			t.Errorf("voter %d after broker 1 stopped: %+v", v.ReplicaID, v)
		}
	}
	if len(p.CurrentVoters) != 3 {
		t.Errorf("voters after broker 1 stopped: %+v", p.CurrentVoters)
	}
	// Its registration went with its lease: nothing to unregister.
	if code := unregisterBroker(t, srvs[2], 1); code != kerr.BrokerIDNotRegistered.Code {
		t.Errorf("unregister the stopped broker 1: code %d", code)
	}
}

// unregisterBroker sends UnregisterBroker for id to srv and returns the
// error code.
func unregisterBroker(t *testing.T, srv *Server, id int32) int16 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kresp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return kresp.(*kmsg.UnregisterBrokerResponse).ErrorCode
}

// TestUnregisterBroker: a running broker's registration is removed and the
// broker registers again (a new broker epoch), as a Kafka broker does on
// its next heartbeat; an id nobody holds is BROKER_ID_NOT_REGISTERED.
func TestUnregisterBroker(t *testing.T) {
	srv := startTestBroker(t)
	defer srv.Close()
	epoch := srv.ctrl.BrokerEpoch()
	if code := unregisterBroker(t, srv, 99); code != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregister 99: code %d", code)
	}
	if code := unregisterBroker(t, srv, srv.NodeID()); code != 0 {
		t.Fatalf("unregister self: code %d", code)
	}
	deadline := time.Now().Add(20 * time.Second)
	for srv.ctrl.BrokerEpoch() == epoch || len(srv.ctrl.Brokers()) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("broker not registered again: epoch %d (was %d), brokers %+v", srv.ctrl.BrokerEpoch(), epoch, srv.ctrl.Brokers())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// requestTo sends req to srv itself and returns the response.
func requestTo(t *testing.T, srv *Server, req kmsg.Request) kmsg.Response {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func addVoterRequest(id int32, dir [16]byte, listener, host string, port uint16) *kmsg.AddRaftVoterRequest {
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.VoterID, req.VoterDirectoryID = id, dir
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = listener, host, port
	req.Listeners = append(req.Listeners, l)
	return req
}

func removeVoterRequest(id int32, dir [16]byte) *kmsg.RemoveRaftVoterRequest {
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.VoterID, req.VoterDirectoryID = id, dir
	return req
}

// voterCode is the error code and message of an AddRaftVoter or
// RemoveRaftVoter response.
func voterCode(resp kmsg.Response) (int16, string) {
	var code int16
	var msg *string
	switch r := resp.(type) {
	case *kmsg.AddRaftVoterResponse:
		code, msg = r.ErrorCode, r.ErrorMessage
	case *kmsg.RemoveRaftVoterResponse:
		code, msg = r.ErrorCode, r.ErrorMessage
	}
	if msg == nil {
		return code, ""
	}
	return code, *msg
}

// TestRaftVotersEtcdMembership: remove-controller removes a stopped
// broker's etcd member; add-controller adds a new member as a learner (not
// ready yet), and, once its broker runs with etcd.initial.cluster.state=
// existing and has caught up, promotes it to voter.
func TestRaftVotersEtcdMembership(t *testing.T) {
	srvs, _ := startEtcdCluster(t, 3)
	defer func() {
		for _, s := range srvs {
			s.Close()
		}
	}()
	voters := func() map[int32][16]byte {
		out := map[int32][16]byte{}
		for _, v := range describeQuorum(t, srvs[2]).Topics[0].Partitions[0].CurrentVoters {
			out[v.ReplicaID] = v.ReplicaDirectoryID
		}
		return out
	}
	before := voters()
	dir1 := before[1]
	if len(before) != 3 || dir1 == [16]byte{} {
		t.Fatalf("voters %v", before)
	}
	if err := srvs[0].Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		req  kmsg.Request
		code int16
	}{
		{removeVoterRequest(1, [16]byte{}), kerr.InvalidRequest.Code},
		{removeVoterRequest(1, [16]byte{1}), kerr.VoterNotFound.Code},
		{addVoterRequest(2, [16]byte{2}, "ETCD_PEER", "127.0.0.1", 1), kerr.DuplicateVoter.Code},
		{addVoterRequest(4, [16]byte{4}, "CONTROLLER", "127.0.0.1", 1), kerr.InvalidRequest.Code},
	} {
		if code, msg := voterCode(requestTo(t, srvs[2], c.req)); code != c.code || msg == "" {
			t.Errorf("%T: code %d %q, want %d", c.req, code, msg, c.code)
		}
	}
	wrong := removeVoterRequest(1, dir1)
	wrong.ClusterID = kmsg.StringPtr("not-this-cluster")
	if code, _ := voterCode(requestTo(t, srvs[2], wrong)); code != kerr.InconsistentClusterID.Code {
		t.Errorf("wrong cluster id: code %d", code)
	}
	// etcd may refuse while it notices broker 1's member is gone: retried.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, msg := voterCode(requestTo(t, srvs[2], removeVoterRequest(1, dir1)))
		if code == 0 {
			break
		}
		if code != kerr.RequestTimedOut.Code || time.Now().After(deadline) {
			t.Fatalf("remove voter 1: %d %q", code, msg)
		}
	}
	if v := voters(); len(v) != 2 || v[1] != [16]byte{} {
		t.Fatalf("voters after removing 1: %v", v)
	}
	// Controller 1's registration outlived its removal until now; that of
	// 3, still a voter, stays.
	for _, c := range []struct {
		id   int32
		code int16
	}{{1, 0}, {1, kerr.ControllerIDNotRegistered.Code}, {99, kerr.ControllerIDNotRegistered.Code}, {3, 0}} {
		req := kmsg.NewPtrUnregisterControllerRequest()
		req.ControllerID = c.id
		r := requestTo(t, srvs[2], req).(*kmsg.UnregisterControllerResponse)
		if r.ErrorCode != c.code || c.code != 0 && (r.ErrorMessage == nil || *r.ErrorMessage != "Controller ID "+strconv.Itoa(int(c.id))+" is not currently registered.") {
			t.Errorf("unregister controller %d: %+v", c.id, r)
		}
	}
	if v := voters(); len(v) != 2 || v[3] == [16]byte{} {
		t.Fatalf("voters after unregistering controllers 1 and 3: %v", v)
	}

	// A new member for broker 4 at a fresh peer URL: a learner first.
	peer := freeURL(t)
	u, err := url.Parse(peer)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	add := addVoterRequest(4, [16]byte{4}, "ETCD_PEER", "127.0.0.1", uint16(port))
	// etcd refuses a membership change until every voter has been
	// connected for a while after the last one: retried, as a timeout.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, msg := voterCode(requestTo(t, srvs[2], add))
		if code == kerr.RequestTimedOut.Code && strings.HasPrefix(msg, "New voter ") {
			break
		}
		if code != kerr.RequestTimedOut.Code || time.Now().After(deadline) {
			t.Fatalf("add voter 4: %d %q", code, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p := describeQuorum(t, srvs[2]).Topics[0].Partitions[0]
	if len(p.CurrentVoters) != 2 || len(p.Observers) != 1 || p.Observers[0].ReplicaID != 4 {
		t.Fatalf("after adding 4 as a learner: voters %+v observers %+v", p.CurrentVoters, p.Observers)
	}
	q, err := srvs[2].ctrl.Quorum(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var initial []string
	for _, m := range q.Members {
		if m.Learner {
			initial = append(initial, "b4="+peer)
		} else {
			initial = append(initial, m.Name+"="+m.PeerURLs[0])
		}
	}
	b4, _ := newTestServer(t, testProps(map[string]string{
		"node.id": "4", "log.dirs": t.TempDir(), "etcd.name": "b4",
		"etcd.initial.cluster": strings.Join(initial, ","), "etcd.initial.cluster.state": "existing",
		"etcd.listen.peer.urls": peer,
	}))
	if err := b4.Start(); err != nil {
		t.Fatal(err)
	}
	srvs = append(srvs, b4)
	deadline = time.Now().Add(30 * time.Second)
	for {
		code, msg := voterCode(requestTo(t, srvs[2], add))
		if code == 0 {
			break
		}
		if code != kerr.RequestTimedOut.Code || time.Now().After(deadline) {
			t.Fatalf("promoting 4: %d %q", code, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if v := voters(); len(v) != 3 || v[4] == [16]byte{} {
		t.Fatalf("voters after promoting 4: %v", v)
	}
}

// TestRaftVotersExternalEtcd: with etcd.endpoints the quorum is static
// (kraft.version 0, not advertised): both changes are UNSUPPORTED_VERSION.
// DescribeQuorum lists the embedding broker's member and the external
// broker as an observer.
func TestRaftVotersExternalEtcd(t *testing.T) {
	host := startTestBroker(t, map[string]string{"etcd.listen.client.urls": freeURL(t)})
	defer host.Close()
	ext := startTestBroker(t, map[string]string{"node.id": "2", "etcd.endpoints": host.ctrl.EmbeddedClientURL()})
	defer ext.Close()
	for _, req := range []kmsg.Request{addVoterRequest(3, [16]byte{3}, "ETCD_PEER", "127.0.0.1", 1), removeVoterRequest(1, [16]byte{1})} {
		code, msg := voterCode(requestTo(t, ext, req))
		if code != kerr.UnsupportedVersion.Code || !strings.HasPrefix(msg, "Cluster doesn't support") || !strings.HasSuffix(msg, "because the kraft.version feature is 0") {
			t.Errorf("%T: %d %q", req, code, msg)
		}
	}
	p := describeQuorum(t, ext).Topics[0].Partitions[0]
	if p.LeaderID != 1 || len(p.CurrentVoters) != 1 || p.CurrentVoters[0].ReplicaID != 1 || p.CurrentVoters[0].LogEndOffset <= 0 ||
		len(p.Observers) != 1 || p.Observers[0].ReplicaID != 2 {
		t.Fatalf("external: %+v", p)
	}
	for _, srv := range []*Server{host, ext} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 4, "test", "1"
		resp := requestTo(t, srv, req).(*kmsg.ApiVersionsResponse)
		kraft := int16(0)
		for _, f := range resp.FinalizedFeatures {
			if f.Name == "kraft.version" {
				kraft = f.MaxVersionLevel
			}
		}
		if want := srv.kraftVersion(); kraft != want || want != map[*Server]int16{host: 1, ext: 0}[srv] {
			t.Errorf("broker %d: finalized kraft.version %d, want %d", srv.NodeID(), kraft, want)
		}
	}
}
