package group

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/recordbatch"
)

// memLog is an in-memory __consumer_offsets: Append assigns offsets as the
// broker does and checks the batch CRC like storage's validation.
type memLog struct {
	mu      sync.Mutex
	parts   int32
	batches map[int32][][]byte
	next    map[int32]int64
	fail    error // returned by Append when set
	// epochs and notLeader are the leadership setLeader changed.
	epochs    map[int32]int32
	notLeader map[int32]bool
	// afterRead, when set, runs once when a ReadFrom has read the batches
	// (a load that reached the end of the log).
	afterRead func()
}

func newMemLog(parts int32) *memLog {
	return &memLog{parts: parts, batches: map[int32][][]byte{}, next: map[int32]int64{}}
}

func (l *memLog) Partitions() int32 { return l.parts }

// LeaderEpoch leads every partition, at the epoch setLeader gave it (0).
func (l *memLog) LeaderEpoch(p int32) (int32, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p < 0 || p >= l.parts || l.notLeader[p] {
		return 0, false
	}
	return l.epochs[p], true
}

// setLeader makes this broker lead p at epoch, or not lead it.
func (l *memLog) setLeader(p int32, leads bool, epoch int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.epochs == nil {
		l.epochs, l.notLeader = map[int32]int32{}, map[int32]bool{}
	}
	l.epochs[p], l.notLeader[p] = epoch, !leads
}

func (l *memLog) Append(p int32, batch []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	if err := recordbatch.Check(batch); err != nil {
		panic(err)
	}
	if !recordbatch.Batch(batch).CRCValid() {
		panic("bad batch CRC")
	}
	b := recordbatch.Batch(append([]byte(nil), batch...))
	b.SetBaseOffset(l.next[p])
	l.next[p] += int64(b.LastOffsetDelta()) + 1
	l.batches[p] = append(l.batches[p], b)
	return nil
}

func (l *memLog) ReadFrom(p int32, offset int64, fn func([]byte) error) error {
	l.mu.Lock()
	bs := append([][]byte(nil), l.batches[p]...)
	l.mu.Unlock()
	// One reused buffer, scribbled over after each call, as the broker's
	// reader reuses its buffer: nothing may keep pointing into it.
	var buf []byte
	for _, b := range bs {
		buf = append(buf[:0], b...)
		if err := fn(buf); err != nil {
			return err
		}
		for i := range buf {
			buf[i] = 0xee
		}
	}
	l.mu.Lock()
	hook := l.afterRead
	l.afterRead = nil
	l.mu.Unlock()
	if hook != nil {
		hook()
	}
	return nil
}

// records returns every key/value written, in order.
func (l *memLog) records(t *testing.T) []record {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []record
	for p := int32(0); p < l.parts; p++ {
		for _, b := range l.batches[p] {
			if err := readBatch(b, func(_ *recordbatch.Header, k, v []byte) error {
				out = append(out, record{k, v})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// memMeta is a fixed set of topics.
type memMeta struct {
	mu     sync.Mutex
	topics map[string]TopicMeta
}

func newMemMeta(topics ...TopicMeta) *memMeta {
	m := &memMeta{topics: map[string]TopicMeta{}}
	for _, t := range topics {
		m.topics[t.Name] = t
	}
	return m
}

func (m *memMeta) Topic(name string) (TopicMeta, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.topics[name]
	return t, ok
}

func (m *memMeta) TopicByID(id [16]byte) (TopicMeta, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.topics {
		if t.ID == id {
			return t, true
		}
	}
	return TopicMeta{}, false
}

func (m *memMeta) Topics() []TopicMeta {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []TopicMeta
	for _, t := range m.topics {
		out = append(out, t)
	}
	return out
}

func (m *memMeta) add(t TopicMeta) {
	m.mu.Lock()
	m.topics[t.Name] = t
	m.mu.Unlock()
}

func topicID(b byte) [16]byte { return [16]byte{b} }

// testCoordinator returns a coordinator with fast timeouts over log and
// meta, waiting until every partition is loaded.
func testCoordinator(t *testing.T, log *memLog, meta *memMeta, adjust ...func(*Config)) *Coordinator {
	t.Helper()
	cfg := DefaultConfig()
	cfg.NumPartitions = log.parts
	cfg.InitialRebalanceDelay = 0
	cfg.MinSessionTimeout = 10 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, f := range adjust {
		f(&cfg)
	}
	c := New(cfg, log, meta)
	t.Cleanup(c.Close)
	c.LoadOwned()
	waitFor(t, "partitions loaded", func() bool {
		loaded := true
		for p := int32(0); p < log.parts; p++ {
			s := c.shardFor(p)
			s.mu.Lock()
			loaded = loaded && s.state == shardLoaded
			s.mu.Unlock()
		}
		return loaded
	})
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// joinAsync sends a JoinGroup and returns a channel with its answer.
func joinAsync(c *Coordinator, version int16, group, member string, instance *string, protocols ...string) chan *kmsg.JoinGroupResponse {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = version
	req.Group, req.MemberID, req.InstanceID = group, member, instance
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 5000
	req.ProtocolType = "consumer"
	for _, p := range protocols {
		rp := kmsg.NewJoinGroupRequestProtocol()
		rp.Name = p
		rp.Metadata = consumerSubscription("t")
		req.Protocols = append(req.Protocols, rp)
	}
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	c.JoinGroup(Client{Version: version, ID: "client", Host: "/127.0.0.1"}, req, func(r *kmsg.JoinGroupResponse) { ch <- r })
	return ch
}

func consumerSubscription(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

func recv[T any](t *testing.T, ch chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no response")
	}
	var zero T
	return zero
}

func syncAsync(c *Coordinator, group, member string, gen int32, assignments map[string][]byte) chan *kmsg.SyncGroupResponse {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = group, member, gen
	for id, a := range assignments {
		ra := kmsg.NewSyncGroupRequestGroupAssignment()
		ra.MemberID, ra.MemberAssignment = id, a
		req.GroupAssignment = append(req.GroupAssignment, ra)
	}
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	c.SyncGroup(Client{Version: 5, ID: "client"}, req, func(r *kmsg.SyncGroupResponse) { ch <- r })
	return ch
}

func heartbeat(c *Coordinator, group, member string, gen int32, instance *string) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation, req.InstanceID = group, member, gen, instance
	return c.Heartbeat(Client{Version: 4}, req).ErrorCode
}

func commit(c *Coordinator, version int16, group, member string, gen int32, topic string, offsets map[int32]int64) *kmsg.OffsetCommitResponse {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = version
	req.Group, req.MemberID, req.Generation = group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, o, 3
		md := "meta"
		rp.Metadata = &md
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return c.OffsetCommit(Client{Version: version}, req)
}

// fetchOffsets returns the committed offsets of a group (v8 API, all topics).
func fetchOffsets(t *testing.T, c *Coordinator, group string) map[string]map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	req.Groups = append(req.Groups, rg)
	resp := c.OffsetFetch(Client{Version: 8}, req)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("offset fetch: %+v", resp.Groups)
	}
	out := map[string]map[int32]int64{}
	for _, tp := range resp.Groups[0].Topics {
		out[tp.Topic] = map[int32]int64{}
		for _, p := range tp.Partitions {
			out[tp.Topic][p.Partition] = p.Offset
		}
	}
	return out
}
