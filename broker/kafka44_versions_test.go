package broker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/recordbatch"
)

// The API versions Kafka 4.1-4.4 added, each exercised at that version with
// kmsg requests pinned to it (kgo would pick the newest version itself), the
// error paths included.

// v44Setup starts a broker with topic (one partition) holding the records
// values, and returns the broker, a client and the topic's id.
func v44Setup(t *testing.T, topic string, values ...string) (*broker.Server, *kgo.Client, [16]byte) {
	t.Helper()
	srv := startBroker(t, t.TempDir())
	t.Cleanup(func() { srv.Close() })
	cl := newClient(t, srv)
	createTopic(t, cl, topic, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil || md.Topics[topic].Err != nil {
		t.Fatal(err, md.Topics[topic].Err)
	}
	return srv, cl, md.Topics[topic].ID
}

// pinned sends req at version v on a connection of its own (kgo would
// choose the version itself) and decodes the answer at v.
func pinned[R kmsg.Response](t *testing.T, srv *broker.Server, req kmsg.Request, v int16) R {
	t.Helper()
	req.SetVersion(v)
	return rawRequest(t, srv, req).(R)
}

// countRecords counts the records of the batches in b.
func countRecords(t *testing.T, b []byte) int {
	t.Helper()
	n := 0
	for len(b) > 0 {
		if len(b) < recordbatch.HeaderSize {
			t.Fatalf("a batch of %d bytes", len(b))
		}
		h := recordbatch.ParseHeader(b)
		if h.Size() > int64(len(b)) {
			t.Fatalf("batch of %d bytes, %d left", h.Size(), len(b))
		}
		n += int(h.RecordCount)
		b = b[h.Size():]
	}
	return n
}

var unknownTopicID = [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}

// TestFetchV18: records by topic id, UNKNOWN_TOPIC_ID for an id no topic
// has.
func TestFetchV18(t *testing.T) {
	srv, _, id := v44Setup(t, "f18", "a", "b")
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
	for _, tid := range [][16]byte{id, unknownTopicID} {
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := pinned[*kmsg.FetchResponse](t, srv, req, 18)
	if resp.ErrorCode != 0 || len(resp.Topics) != 2 {
		t.Fatalf("%v, %d topics; want NONE and 2", kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
	}
	for _, rt := range resp.Topics {
		p := rt.Partitions[0]
		switch rt.TopicID {
		case id:
			if p.ErrorCode != 0 || p.HighWatermark != 2 {
				t.Fatalf("known topic: %v, high watermark %d; want NONE, 2", kerr.ErrorForCode(p.ErrorCode), p.HighWatermark)
			}
			if n := countRecords(t, p.RecordBatches); n != 2 {
				t.Fatalf("known topic: %d records, want 2", n)
			}
		case unknownTopicID:
			if p.ErrorCode != kerr.UnknownTopicID.Code {
				t.Fatalf("unknown topic id: %v, want UNKNOWN_TOPIC_ID", kerr.ErrorForCode(p.ErrorCode))
			}
		default:
			t.Fatalf("answer for topic id %x, asked for neither", rt.TopicID)
		}
	}
}

// initTxnID registers transactional id id (InitProducerId) and returns its
// producer id and epoch.
func initTxnID(t *testing.T, srv *broker.Server, id string) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
	resp := pinned[*kmsg.InitProducerIDResponse](t, srv, req, 5)
	if resp.ErrorCode != 0 {
		t.Fatalf("InitProducerId %s: %v", id, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// TestListTransactionsV2: the transactional id pattern keeps the ids it
// matches whole (as RE2J's matches()), null or empty keeps every id, an
// invalid pattern is INVALID_REGULAR_EXPRESSION, and v1 has no pattern.
func TestListTransactionsV2(t *testing.T) {
	srv, cl, _ := v44Setup(t, "lt")
	ensureTxnStateTopic(t, cl)
	for _, id := range []string{"lt-a", "lt-b", "other-lt-c"} {
		initTxnID(t, srv, id)
	}
	list := func(v int16, pattern *string) *kmsg.ListTransactionsResponse {
		req := kmsg.NewPtrListTransactionsRequest()
		req.TransactionalIDPattern = pattern
		return pinned[*kmsg.ListTransactionsResponse](t, srv, req, v)
	}
	ids := func(resp *kmsg.ListTransactionsResponse) string {
		var s []string
		for _, ts := range resp.TransactionStates {
			s = append(s, ts.TransactionalID)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		v       int16
		pattern *string
		want    string
	}{
		{2, kmsg.StringPtr("lt-.*"), "lt-a,lt-b"},
		{2, kmsg.StringPtr("lt-"), ""}, // a whole match, not a find
		{2, kmsg.StringPtr(".*-c"), "other-lt-c"},
		{2, kmsg.StringPtr(""), "lt-a,lt-b,other-lt-c"},
		{2, nil, "lt-a,lt-b,other-lt-c"},
		{1, kmsg.StringPtr("lt-.*"), "lt-a,lt-b,other-lt-c"}, // not sent below v2
	} {
		resp := list(c.v, c.pattern)
		if resp.ErrorCode != 0 || ids(resp) != c.want {
			t.Errorf("v%d pattern %v: %v %q, want %q", c.v, c.pattern, kerr.ErrorForCode(resp.ErrorCode), ids(resp), c.want)
		}
	}
	if resp := list(2, kmsg.StringPtr("lt-(")); resp.ErrorCode != kerr.InvalidRegularExpression.Code || len(resp.TransactionStates) != 0 {
		t.Fatalf("invalid pattern: %v %q, want INVALID_REGULAR_EXPRESSION and nothing", kerr.ErrorForCode(resp.ErrorCode), ids(resp))
	}
}

// TestDeleteGroupsV3: v3 answers as Kafka 4.4 does, its group errors
// without a message (the field exists from v3; Kafka leaves it null).
func TestDeleteGroupsV3(t *testing.T) {
	srv, cl, _ := v44Setup(t, "dg")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "dg", Partition: 0, At: 0})
	for _, g := range []string{"dg-empty-2", "dg-empty-3"} {
		if r, err := kadm.NewClient(cl).CommitOffsets(ctx, g, offs); err != nil || r.Error() != nil {
			t.Fatal(err, r.Error())
		}
	}
	for _, v := range []int16{2, 3} {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{fmt.Sprintf("dg-empty-%d", v), "dg-missing"}
		resp := pinned[*kmsg.DeleteGroupsResponse](t, srv, req, v)
		if len(resp.Groups) != 2 {
			t.Fatalf("v%d: %d groups answered, want 2", v, len(resp.Groups))
		}
		for _, g := range resp.Groups {
			switch g.Group {
			case req.Groups[0]:
				if g.ErrorCode != 0 || g.ErrorMessage != nil {
					t.Fatalf("v%d %s: %v %v, want NONE, no message", v, g.Group, kerr.ErrorForCode(g.ErrorCode), g.ErrorMessage)
				}
			case "dg-missing":
				if g.ErrorCode != kerr.GroupIDNotFound.Code {
					t.Fatalf("v%d %s: %v, want GROUP_ID_NOT_FOUND", v, g.Group, kerr.ErrorForCode(g.ErrorCode))
				}
				if g.ErrorMessage != nil {
					t.Fatalf("v%d %s: message %q, want none (Kafka 4.4 sends none)", v, g.Group, *g.ErrorMessage)
				}
			default:
				t.Fatalf("v%d: answer for %s", v, g.Group)
			}
		}
	}
}

// TestWriteTxnMarkersV2: a transaction version 2 marker needs an epoch
// above the producer's, or equal once its transaction is closed (a retried
// marker); below v2 (and at transaction version 0-1) an equal epoch ends
// the open transaction.
func TestWriteTxnMarkersV2(t *testing.T) {
	srv, cl, _ := v44Setup(t, "wtm")
	ensureTxnStateTopic(t, cl)
	p := newClient(t, srv, kgo.TransactionalID("wtm-tx"), kgo.DefaultProduceTopic("wtm"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, kgo.StringRecord("open")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dp := kmsg.NewPtrDescribeProducersRequest()
	dp.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "wtm", Partitions: []int32{0}}}
	dr := pinned[*kmsg.DescribeProducersResponse](t, srv, dp, 0)
	if len(dr.Topics) != 1 || len(dr.Topics[0].Partitions) != 1 || len(dr.Topics[0].Partitions[0].ActiveProducers) != 1 {
		t.Fatalf("DescribeProducers: %+v, want the one transactional producer", dr)
	}
	ap := dr.Topics[0].Partitions[0].ActiveProducers[0]
	if ap.CurrentTxnStartOffset < 0 {
		t.Fatalf("producer %d: no open transaction", ap.ProducerID)
	}
	mark := func(v int16, epoch int32, tv int8) int16 {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.TransactionVersion = ap.ProducerID, int16(epoch), false, tv
		m.CoordinatorEpoch = 1 << 20 // not fenced by the coordinator's own markers
		m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "wtm", Partitions: []int32{0}}}
		req.Markers = append(req.Markers, m)
		resp := pinned[*kmsg.WriteTxnMarkersResponse](t, srv, req, v)
		if len(resp.Markers) != 1 || len(resp.Markers[0].Topics) != 1 || len(resp.Markers[0].Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	e := ap.ProducerEpoch
	for _, c := range []struct {
		v     int16
		epoch int32
		tv    int8
		want  *kerr.Error
	}{
		{2, e, 2, kerr.InvalidProducerEpoch},     // TV2, same epoch, transaction open: a zombie
		{2, e - 1, 0, kerr.InvalidProducerEpoch}, // below, whatever the version
		{2, e, 0, nil},                           // TV0-1: an equal epoch closes the transaction
		{2, e, 2, nil},                           // TV2, same epoch, transaction closed: a retry
		{2, e + 1, 2, nil},                       // TV2, bumped
		{2, e, 2, kerr.InvalidProducerEpoch},     // now below
		{1, e, 2, kerr.InvalidProducerEpoch},     // v1 carries no version: the plain check, e < e+1
	} {
		code := mark(c.v, c.epoch, c.tv)
		want := int16(0)
		if c.want != nil {
			want = c.want.Code
		}
		if code != want {
			t.Fatalf("v%d epoch %d (producer's %d) version %d: %v, want %v", c.v, c.epoch, e, c.tv, kerr.ErrorForCode(code), c.want)
		}
	}
}

// TestDescribeLogDirsV5: IsCordoned for the directories named in
// cordoned.log.dirs, or all of them for *.
func TestDescribeLogDirsV5(t *testing.T) {
	for _, cordon := range []string{"b", "*"} {
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		value := cordon
		if cordon == "b" {
			value = b
		}
		srv := startBroker(t, dir, "log.dirs", a+","+b, "cordoned.log.dirs", value)
		t.Cleanup(func() { srv.Close() })
		check := func(v int16) {
			resp := pinned[*kmsg.DescribeLogDirsResponse](t, srv, kmsg.NewPtrDescribeLogDirsRequest(), v)
			if resp.ErrorCode != 0 || len(resp.Dirs) != 2 {
				t.Errorf("v%d: %v, %d dirs; want NONE and 2", v, kerr.ErrorForCode(resp.ErrorCode), len(resp.Dirs))
			}
			for _, d := range resp.Dirs {
				if want := v >= 5 && (cordon == "*" || d.Dir == b); d.ErrorCode != 0 || d.IsCordoned != want {
					t.Errorf("cordoned.log.dirs=%s v%d %s: %v, cordoned %v; want NONE, %v", cordon, v, d.Dir, kerr.ErrorForCode(d.ErrorCode), d.IsCordoned, want)
				}
			}
		}
		check(4)
		check(5)
	}
}

// TestListOffsetsV10V11: v10 carries a timeout (remote storage lookups,
// none here), v11's -6 (earliest pending upload) answers -1 as -5 does
// without tiered storage, and the other lookups are unchanged.
func TestListOffsetsV10V11(t *testing.T) {
	srv, _, _ := v44Setup(t, "lo", "a", "b", "c")
	for _, v := range []int16{9, 10, 11} {
		for _, c := range []struct {
			ts, offset int64
			epoch      int32
		}{{-2, 0, 0}, {-1, 3, 0}, {-4, 0, 0}, {-5, -1, -1}, {-6, -1, -1}} {
			req := kmsg.NewPtrListOffsetsRequest()
			req.TimeoutMillis = 1
			req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "lo", Partitions: []kmsg.ListOffsetsRequestTopicPartition{
				{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: c.ts}}}}
			resp := pinned[*kmsg.ListOffsetsResponse](t, srv, req, v)
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.Offset != c.offset || p.LeaderEpoch != c.epoch || p.Timestamp != -1 {
				t.Errorf("v%d timestamp %d: %v offset %d epoch %d timestamp %d; want NONE %d %d -1",
					v, c.ts, kerr.ErrorForCode(p.ErrorCode), p.Offset, p.LeaderEpoch, p.Timestamp, c.offset, c.epoch)
			}
		}
		req := kmsg.NewPtrListOffsetsRequest()
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "lo-missing", Partitions: []kmsg.ListOffsetsRequestTopicPartition{
			{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: -6}}}}
		if p := pinned[*kmsg.ListOffsetsResponse](t, srv, req, v).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("v%d unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", v, kerr.ErrorForCode(p.ErrorCode))
		}
	}
}

// TestApiVersionsV5: a request naming this cluster and node gets the full
// answer; another cluster or node REBOOTSTRAP_REQUIRED and no keys; a
// cluster id without a node id (or the reverse) INVALID_REQUEST.
func TestApiVersionsV5(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	other := "not-" + srv.ClusterID()
	for _, c := range []struct {
		name    string
		cluster *string
		node    int32
		want    *kerr.Error
	}{
		{"bootstrapping", nil, -1, nil},
		{"this broker", kmsg.StringPtr(srv.ClusterID()), srv.NodeID(), nil},
		{"other node", kmsg.StringPtr(srv.ClusterID()), srv.NodeID() + 1, kerr.RebootstrapRequired},
		{"other cluster", &other, srv.NodeID(), kerr.RebootstrapRequired},
		{"cluster only", kmsg.StringPtr(srv.ClusterID()), -1, kerr.InvalidRequest},
		{"node only", nil, srv.NodeID(), kerr.InvalidRequest},
	} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(5)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "strait-test", "1.0"
		req.ClusterID, req.NodeID = c.cluster, c.node
		rc := dialRaw(t, srv)
		rc.send(encodeRequest(req, 7))
		_, body, err := rc.readResponse()
		if err != nil {
			t.Fatal(err)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(5)
		if err := resp.ReadFrom(body); err != nil { // the response header is v0
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.want == nil {
			if resp.ErrorCode != 0 || len(resp.ApiKeys) < 40 {
				t.Fatalf("%s: %v with %d keys, want NONE and every key", c.name, kerr.ErrorForCode(resp.ErrorCode), len(resp.ApiKeys))
			}
			continue
		}
		if resp.ErrorCode != c.want.Code || len(resp.ApiKeys) != 0 {
			t.Fatalf("%s: %v with %d keys, want %v and none", c.name, kerr.ErrorForCode(resp.ErrorCode), len(resp.ApiKeys), c.want)
		}
	}
}

// decodeAt decodes a response body (after a v0 response header; flexible
// versions' header tags are skipped) into resp at version v.
func decodeAt(t *testing.T, body []byte, req kmsg.Request, resp kmsg.Response) {
	t.Helper()
	if req.IsFlexible() {
		body = body[1:]
	}
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding %T: %v", resp, err)
	}
}

// TestJoinGroupV0V1: Kafka 4.1 serves JoinGroup v0-1 again. A v0-3 member
// gets its id on its first join (no MEMBER_ID_REQUIRED, which is v4+), a v0
// member's rebalance timeout is its session timeout, and a v0 member and a
// v1 member rebalance together.
func TestJoinGroupV0V1(t *testing.T) {
	srv := startBroker(t, t.TempDir(), groupBrokerProps...)
	defer srv.Close()
	ensureGroupCoordinator(t, newClient(t, srv), "jg01")
	join := func(v int16, member string) *kmsg.JoinGroupRequest {
		req := kmsg.NewPtrJoinGroupRequest()
		req.SetVersion(v)
		req.Group, req.MemberID, req.ProtocolType = "jg01", member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 5000, 5000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1}}}
		return req
	}
	a := pinned[*kmsg.JoinGroupResponse](t, srv, join(0, ""), 0)
	if a.ErrorCode != 0 || a.MemberID == "" || a.Generation != 1 || a.LeaderID != a.MemberID || len(a.Members) != 1 {
		t.Fatalf("v0 first join: %v %+v; want NONE, an id, generation 1, itself the leader", kerr.ErrorForCode(a.ErrorCode), a)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = "jg01", a.Generation, a.MemberID
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: a.MemberID, MemberAssignment: []byte{9}}}
	if s := pinned[*kmsg.SyncGroupResponse](t, srv, sync, 0); s.ErrorCode != 0 || string(s.MemberAssignment) != "\x09" {
		t.Fatalf("v0 sync: %v %q", kerr.ErrorForCode(s.ErrorCode), s.MemberAssignment)
	}

	// A v1 member joins: it parks until a rejoins.
	bReq := join(1, "")
	rc := dialRaw(t, srv)
	rc.send(encodeRequest(bReq, 1))
	bDone := make(chan []byte, 1)
	go func() {
		_, body, err := rc.readResponse()
		if err != nil {
			body = nil
		}
		bDone <- body
	}()
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = "jg01", a.Generation, a.MemberID
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := pinned[*kmsg.HeartbeatResponse](t, srv, hb, 0)
		if r.ErrorCode == kerr.RebalanceInProgress.Code {
			break
		}
		if r.ErrorCode != 0 || time.Now().After(deadline) {
			t.Fatalf("heartbeat v0 while b joins: %v, want REBALANCE_IN_PROGRESS", kerr.ErrorForCode(r.ErrorCode))
		}
		time.Sleep(20 * time.Millisecond)
	}
	a2 := pinned[*kmsg.JoinGroupResponse](t, srv, join(0, a.MemberID), 0)
	var b kmsg.JoinGroupResponse
	select {
	case body := <-bDone:
		if body == nil {
			t.Fatal("b's join: no answer")
		}
		decodeAt(t, body, bReq, &b)
	case <-time.After(10 * time.Second):
		t.Fatal("b's join: no answer in 10 s")
	}
	if a2.ErrorCode != 0 || b.ErrorCode != 0 || a2.Generation != 2 || b.Generation != 2 || b.MemberID == "" {
		t.Fatalf("rejoin: a %v gen %d, b %v gen %d member %q; want NONE, generation 2 for both",
			kerr.ErrorForCode(a2.ErrorCode), a2.Generation, kerr.ErrorForCode(b.ErrorCode), b.Generation, b.MemberID)
	}
	leader := a2
	if b.LeaderID == b.MemberID {
		leader = &b
	}
	if len(leader.Members) != 2 {
		t.Fatalf("the leader's answer lists %d members, want 2", len(leader.Members))
	}
}

// ensureGroupCoordinator waits until group has a coordinator (the first
// FindCoordinator creates __consumer_offsets).
func ensureGroupCoordinator(t *testing.T, cl *kgo.Client, group string) {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKeys = []string{group}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := req.RequestWith(context.Background(), cl)
		if err == nil && len(resp.Coordinators) == 1 && resp.Coordinators[0].ErrorCode == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no group coordinator: %v %+v", err, resp)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOffsetCommitFetchV10: v10 commits and fetches by topic id; an id no
// topic has is UNKNOWN_TOPIC_ID on each of its partitions (nothing stored
// for it); fetching every topic names each by id; a v9 fetch by name sees
// what v10 committed.
func TestOffsetCommitFetchV10(t *testing.T) {
	srv, cl, id := v44Setup(t, "oc10", "a")
	ensureGroupCoordinator(t, cl, "oc10g")
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group = "oc10g"
	for _, tid := range [][16]byte{id, unknownTopicID} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset, rp.Metadata = 1, kmsg.StringPtr("m")
		rt.Partitions = append(rt.Partitions, rp)
		commit.Topics = append(commit.Topics, rt)
	}
	cr := pinned[*kmsg.OffsetCommitResponse](t, srv, commit, 10)
	if len(cr.Topics) != 2 {
		t.Fatalf("commit: %d topics answered, want 2", len(cr.Topics))
	}
	for _, rt := range cr.Topics {
		want := int16(0)
		if rt.TopicID == unknownTopicID {
			want = kerr.UnknownTopicID.Code
		} else if rt.TopicID != id {
			t.Fatalf("commit: answer for topic id %x", rt.TopicID)
		}
		if len(rt.Partitions) != 1 || rt.Partitions[0].ErrorCode != want {
			t.Fatalf("commit %x: %+v, want %v", rt.TopicID, rt.Partitions, kerr.ErrorForCode(want))
		}
	}

	fetch := func(topics []kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroup {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.Topics = "oc10g", topics
		req.Groups = append(req.Groups, g)
		resp := pinned[*kmsg.OffsetFetchResponse](t, srv, req, 10)
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("fetch: %+v", resp)
		}
		return resp.Groups[0]
	}
	g := fetch([]kmsg.OffsetFetchRequestGroupTopic{{TopicID: id, Partitions: []int32{0}}, {TopicID: unknownTopicID, Partitions: []int32{0}}})
	if len(g.Topics) != 2 {
		t.Fatalf("fetch by id: %d topics, want 2", len(g.Topics))
	}
	for _, rt := range g.Topics {
		p := rt.Partitions[0]
		switch rt.TopicID {
		case id:
			if p.ErrorCode != 0 || p.Offset != 1 || p.Metadata == nil || *p.Metadata != "m" {
				t.Fatalf("fetch by id: %v offset %d, want NONE 1 m", kerr.ErrorForCode(p.ErrorCode), p.Offset)
			}
		case unknownTopicID:
			if p.ErrorCode != kerr.UnknownTopicID.Code || p.Offset != -1 {
				t.Fatalf("fetch unknown id: %v offset %d, want UNKNOWN_TOPIC_ID -1", kerr.ErrorForCode(p.ErrorCode), p.Offset)
			}
		default:
			t.Fatalf("fetch: answer for topic id %x", rt.TopicID)
		}
	}
	if g := fetch(nil); len(g.Topics) != 1 || g.Topics[0].TopicID != id || g.Topics[0].Partitions[0].Offset != 1 {
		t.Fatalf("fetch every topic: %+v, want oc10 by id at offset 1", g.Topics)
	}

	old := kmsg.NewPtrOffsetFetchRequest()
	og := kmsg.NewOffsetFetchRequestGroup()
	og.Group, og.Topics = "oc10g", []kmsg.OffsetFetchRequestGroupTopic{{Topic: "oc10", Partitions: []int32{0}}}
	old.Groups = append(old.Groups, og)
	ov := pinned[*kmsg.OffsetFetchResponse](t, srv, old, 9)
	if len(ov.Groups) != 1 || len(ov.Groups[0].Topics) != 1 || ov.Groups[0].Topics[0].Topic != "oc10" || ov.Groups[0].Topics[0].Partitions[0].Offset != 1 {
		t.Fatalf("v9 fetch by name: %+v", ov)
	}
}

// TestTxnOffsetCommitV6: offsets committed in a transaction by topic id
// (v6), visible to OffsetFetch once the transaction commits; an unknown id
// is UNKNOWN_TOPIC_ID.
func TestTxnOffsetCommitV6(t *testing.T) {
	srv, cl, id := v44Setup(t, "toc6", "a", "b")
	ensureTxnStateTopic(t, cl)
	ensureGroupCoordinator(t, cl, "toc6g")
	pid, epoch := initTxnID(t, srv, "toc6-tx")

	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "toc6-tx", "toc6g", pid, epoch
	for _, tid := range [][16]byte{id, unknownTopicID} {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset = 2
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := pinned[*kmsg.TxnOffsetCommitResponse](t, srv, req, 6)
	if len(resp.Topics) != 2 {
		t.Fatalf("%d topics answered, want 2", len(resp.Topics))
	}
	for _, rt := range resp.Topics {
		want := int16(0)
		if rt.TopicID == unknownTopicID {
			want = kerr.UnknownTopicID.Code
		} else if rt.TopicID != id {
			t.Fatalf("answer for topic id %x", rt.TopicID)
		}
		if len(rt.Partitions) != 1 || rt.Partitions[0].ErrorCode != want {
			t.Fatalf("topic %x: %+v, want %v", rt.TopicID, rt.Partitions, kerr.ErrorForCode(want))
		}
	}

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "toc6-tx", pid, epoch, true
	if r := pinned[*kmsg.EndTxnResponse](t, srv, end, 5); r.ErrorCode != 0 {
		t.Fatalf("EndTxn: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group, g.Topics = "toc6g", []kmsg.OffsetFetchRequestGroupTopic{{TopicID: id, Partitions: []int32{0}}}
	fetch.Groups = append(fetch.Groups, g)
	fetch.RequireStable = true
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := pinned[*kmsg.OffsetFetchResponse](t, srv, fetch, 10)
		if len(r.Groups) == 1 && len(r.Groups[0].Topics) == 1 {
			p := r.Groups[0].Topics[0].Partitions[0]
			if p.ErrorCode == 0 && p.Offset == 2 {
				return
			}
			if p.ErrorCode != kerr.UnstableOffsetCommit.Code && p.ErrorCode != 0 {
				t.Fatalf("OffsetFetch after commit: %v", kerr.ErrorForCode(p.ErrorCode))
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the committed offset did not show in 10 s: %+v", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestProduceV13: records produced by topic id land in that topic (a
// consumer reads them back), the answer names the topic by id, and an id
// no topic has is UNKNOWN_TOPIC_ID on each of its partitions.
func TestProduceV13(t *testing.T) {
	srv, _, id := v44Setup(t, "p13", "before")
	b := recordbatch.NewBuilder(time.Now().UnixMilli())
	b.Add(nil, []byte("by-id-1"))
	b.Add(nil, []byte("by-id-2"))
	batch := b.Build()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	for _, tid := range [][16]byte{unknownTopicID, id} {
		rt := kmsg.NewProduceRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = append([]byte(nil), batch...)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := pinned[*kmsg.ProduceResponse](t, srv, req, 13)
	if len(resp.Topics) != 2 {
		t.Fatalf("%d topics answered, want 2", len(resp.Topics))
	}
	for _, rt := range resp.Topics {
		p := rt.Partitions[0]
		switch rt.TopicID {
		case id:
			if p.ErrorCode != 0 || p.BaseOffset != 1 {
				t.Fatalf("known topic: %v base offset %d, want NONE 1", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
			}
		case unknownTopicID:
			if p.ErrorCode != kerr.UnknownTopicID.Code || p.BaseOffset != -1 {
				t.Fatalf("unknown topic id: %v base offset %d, want UNKNOWN_TOPIC_ID -1", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
			}
		default:
			t.Fatalf("answer for topic id %x", rt.TopicID)
		}
	}

	// A zero id is no topic's.
	zero := kmsg.NewPtrProduceRequest()
	zero.Acks, zero.TimeoutMillis = 1, 5000
	zero.Topics = []kmsg.ProduceRequestTopic{{Partitions: []kmsg.ProduceRequestTopicPartition{{Records: append([]byte(nil), batch...)}}}}
	if zr := pinned[*kmsg.ProduceResponse](t, srv, zero, 13); len(zr.Topics) != 1 || zr.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("zero topic id: %+v, want UNKNOWN_TOPIC_ID", zr)
	}

	consumer := newClient(t, srv, kgo.ConsumeTopics("p13"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	for len(got) < 3 && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != "before,by-id-1,by-id-2" {
		t.Fatalf("read back %q, want before, by-id-1, by-id-2", got)
	}
}

// byNameVersions caps a client at the newest versions that name topics by
// name in the requests a test builds itself: Produce 12, OffsetCommit and
// OffsetFetch 9, TxnOffsetCommit 5 (kgo sends such a request at the newest
// version both sides speak, where a topic without its id is
// UNKNOWN_TOPIC_ID, in Kafka 4.4 as in Strait).
func byNameVersions() *kversion.Versions {
	v := kversion.V4_4_0()
	v.SetMaxKeyVersion(int16(kmsg.Produce), 12)
	v.SetMaxKeyVersion(int16(kmsg.OffsetCommit), 9)
	v.SetMaxKeyVersion(int16(kmsg.OffsetFetch), 9)
	v.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 5)
	return v
}
