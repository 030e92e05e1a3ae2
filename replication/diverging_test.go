package replication

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/storage"
)

// logBytes is l's batches from offset from on, as stored.
func logBytes(l *storage.Log, from int64) ([]byte, error) {
	var out []byte
	for range 1000 {
		end := l.LogEndOffset()
		if from >= end {
			return out, nil
		}
		res, err := l.Read(from, 1<<20, end, true)
		if err != nil {
			return nil, err
		}
		if res.Size == 0 {
			return out, nil
		}
		buf := make([]byte, res.Size)
		pos := int64(0)
		for _, sl := range res.Slices {
			if _, err := sl.File.ReadAt(buf[pos:pos+sl.Len], sl.Pos); err != nil {
				res.Release()
				return nil, err
			}
			pos += sl.Len
		}
		res.Release()
		out = append(out, buf...)
		from = res.EndOffset
	}
	return nil, fmt.Errorf("reading %s: no end after 1000 reads", l.Dir())
}

// divergingLeader is a leader answering fetches from its logs (one per
// partition of one topic) with a fetch session, as Strait's leader does:
// a partition whose last fetched epoch ends before its fetch offset here,
// or is not in this log, is answered with a diverging epoch and no
// records (Kafka's Partition.readRecords); an incremental fetch reads every
// partition of the session at the offset and epoch last sent.
type divergingLeader struct {
	logs map[int32]*storage.Log

	mu        sync.Mutex
	sessionID int32
	epoch     int32
	parts     map[int32]kmsg.FetchRequestTopicPartition
	hw        map[int32]int64 // high watermark last answered, per partition
	fetches   []kmsg.FetchRequestTopicPartition
	diverged  []kmsg.FetchResponseTopicPartitionDivergingEpoch
	others    []string // requests other than Fetch
	errs      []error
}

func (l *divergingLeader) request(ctx context.Context, _ int32, req kmsg.Request) (kmsg.Response, error) {
	r, ok := req.(*kmsg.FetchRequest)
	if !ok {
		l.mu.Lock()
		l.others = append(l.others, fmt.Sprintf("%T", req))
		l.mu.Unlock()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	resp, records := l.fetch(r)
	if !records {
		// Nothing new: hold the fetch a little, as a leader does.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return resp, nil
}

func (l *divergingLeader) fetch(r *kmsg.FetchRequest) (*kmsg.FetchResponse, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	resp := kmsg.NewPtrFetchResponse()
	switch {
	case r.SessionEpoch == 0:
		l.sessionID++
		l.epoch, l.parts, l.hw = 1, map[int32]kmsg.FetchRequestTopicPartition{}, map[int32]int64{}
	case r.SessionID != l.sessionID || r.SessionEpoch != l.epoch:
		l.errs = append(l.errs, fmt.Errorf("fetch on session %d epoch %d, want %d epoch %d",
			r.SessionID, r.SessionEpoch, l.sessionID, l.epoch))
		resp.ErrorCode = 71 // INVALID_FETCH_SESSION_EPOCH
		return resp, false
	default:
		l.epoch++
	}
	resp.SessionID = l.sessionID
	var topic string
	var topicID [16]byte
	for _, rt := range r.Topics {
		topic, topicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			l.parts[rp.Partition] = rp
			l.fetches = append(l.fetches, rp)
		}
	}
	for _, ft := range r.ForgottenTopics {
		for _, p := range ft.Partitions {
			delete(l.parts, p)
		}
	}
	st := kmsg.NewFetchResponseTopic()
	st.Topic, st.TopicID = topic, topicID
	records := false
	for _, idx := range slices.Sorted(maps.Keys(l.parts)) {
		rp := l.parts[idx]
		log := l.logs[idx]
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition = idx
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = log.LogEndOffset(), log.LogEndOffset(), log.LogStartOffset()
		send := sp.HighWatermark != l.hw[idx]
		l.hw[idx] = sp.HighWatermark
		epoch, end := log.EndOffsetForEpoch(rp.LastFetchedEpoch)
		if rp.LastFetchedEpoch >= 0 && (epoch < rp.LastFetchedEpoch || end < rp.FetchOffset) {
			sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = epoch, end
			l.diverged = append(l.diverged, sp.DivergingEpoch)
			send = true
		} else if b, err := logBytes(log, rp.FetchOffset); err != nil {
			l.errs = append(l.errs, err)
		} else if len(b) > 0 {
			sp.RecordBatches = b
			records, send = true, true
		}
		if send {
			st.Partitions = append(st.Partitions, sp)
		}
	}
	if len(st.Partitions) > 0 {
		resp.Topics = append(resp.Topics, st)
	}
	return resp, records
}

// TestFollowerTruncatesOnDivergingEpoch: a follower whose log diverges
// from its new leader's truncates through the leader's fetch answers
// alone (truncation on fetch, Fetch v12+), without an OffsetForLeaderEpoch
// request: its first fetch names its latest epoch, the leader answers
// where that epoch ends in its log, the follower cuts back (here twice:
// the leader never had the follower's epoch 3, and the follower never had
// the leader's epoch 2) and, on its fetch session, fetches again from its
// new end. It ends with the leader's log byte for byte, epochs included;
// a partition that does not diverge fetches at once alongside.
func TestFollowerTruncatesOnDivergingEpoch(t *testing.T) {
	leader := &divergingLeader{logs: map[int32]*storage.Log{}}
	e := newEnv(t, nil, clientFunc(leader.request))
	// Node 1 leads div-0 and div-1 at epoch 1 and writes offsets 0-3;
	// div-0 then gets offsets 4-5 at epoch 3, which no other broker has.
	e.topic("div", []int32{1, 2}, []int32{1, 2})
	followers := []*Partition{e.m.Partition("div", 0), e.m.Partition("div", 1)}
	prefixes := make([][]byte, len(followers))
	for i, p := range followers {
		produce(t, p, 4)
		var err error
		if prefixes[i], err = logBytes(p.Log(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := followers[0].Log().AppendAsLeader(testBatch(2), 3); err != nil {
		t.Fatal(err)
	}
	// Broker 2's logs: offsets 0-3 as node 1 wrote them; then div-0 has
	// 4-6 at epoch 2 and 7-9 at epoch 4, div-1 4-5 at epoch 4.
	dir := t.TempDir()
	for i := range followers {
		l := openTestLog(t, filepath.Join(dir, fmt.Sprintf("div-%d", i)))
		if _, err := l.AppendAsFollower(prefixes[i]); err != nil || l.LogEndOffset() != 4 {
			t.Fatalf("div-%d: copying the common prefix: %v, log end %d", i, err, l.LogEndOffset())
		}
		if i == 0 {
			mustAppend(t, l, 2, 3)
		}
		mustAppend(t, l, 4, 3-i)
		l.UpdateHighWatermark(l.LogEndOffset())
		leader.logs[int32(i)] = l
	}
	// Broker 2 takes over both at epoch 4.
	tp, _ := e.meta.Topic("div")
	tp.Partitions = slices.Clone(tp.Partitions)
	for i := range tp.Partitions {
		tp.Partitions[i].Leader, tp.Partitions[i].LeaderEpoch = 2, 4
		tp.Partitions[i].ISR = []int32{2, 1}
	}
	e.meta.setChanged(tp, []int32{0, 1})

	waitUntil(t, "the followers to hold the leader's logs", func() bool {
		for i, p := range followers {
			if p.Log().LogEndOffset() != leader.logs[int32(i)].LogEndOffset() {
				return false
			}
		}
		return true
	})
	for i, p := range followers {
		got, err := logBytes(p.Log(), 0)
		if err != nil {
			t.Fatal(err)
		}
		want, err := logBytes(leader.logs[int32(i)], 0)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("div-%d: the follower's log (%d bytes) differs from the leader's (%d bytes)", i, len(got), len(want))
		}
		for epoch := int32(0); epoch <= 5; epoch++ {
			fe, fo := p.Log().EndOffsetForEpoch(epoch)
			le, lo := leader.logs[int32(i)].EndOffsetForEpoch(epoch)
			if fe != le || fo != lo {
				t.Errorf("div-%d: epoch %d ends at (%d, %d) on the follower, (%d, %d) on the leader", i, epoch, fe, fo, le, lo)
			}
		}
	}
	leader.mu.Lock()
	defer leader.mu.Unlock()
	for _, err := range leader.errs {
		t.Error(err)
	}
	if len(leader.others) > 0 {
		t.Errorf("the follower sent %v, want fetches only", leader.others)
	}
	// div-0's fetches: from 6 at epoch 3 (diverging at epoch 2, which ends
	// at 7), from 4 at epoch 1 (the end of the follower's epoch 1) and
	// records.
	var div0 [][2]int64
	for _, rp := range leader.fetches {
		if rp.Partition == 0 {
			div0 = append(div0, [2]int64{rp.FetchOffset, int64(rp.LastFetchedEpoch)})
		}
	}
	if len(div0) < 2 || div0[0] != [2]int64{6, 3} || div0[1] != [2]int64{4, 1} {
		t.Errorf("div-0 fetched at (offset, last fetched epoch) %v, want (6, 3), (4, 1) first", div0)
	}
	if len(leader.diverged) != 1 || leader.diverged[0].Epoch != 2 || leader.diverged[0].EndOffset != 7 {
		t.Errorf("diverging epochs answered %+v, want one: epoch 2, end offset 7", leader.diverged)
	}
}

// TestFollowerOfAnOlderLeaderTruncatesFirst: a leader whose registration
// does not say it truncates on fetch (a Strait version before it, which
// ignores last_fetched_epoch) is asked OffsetForLeaderEpoch before any
// fetch, even for a log with epochs: otherwise a diverged suffix would
// stay.
func TestFollowerOfAnOlderLeaderTruncatesFirst(t *testing.T) {
	leader := &divergingLeader{logs: map[int32]*storage.Log{}}
	e := newEnv(t, nil, clientFunc(leader.request))
	e.meta.brokersMu.Lock()
	for i := range e.meta.brokers {
		if e.meta.brokers[i].NodeID == 2 {
			e.meta.brokers[i].TruncatesOnFetch = false
		}
	}
	e.meta.brokersMu.Unlock()
	e.topic("old", []int32{1, 2}, []int32{1, 2})
	p := e.m.Partition("old", 0)
	produce(t, p, 4) // epoch 1 in its log
	if _, ok := p.Log().LatestEpoch(); !ok {
		t.Fatal("the follower's log has no epoch: the case is not the one meant")
	}
	leader.logs[0] = openTestLog(t, filepath.Join(t.TempDir(), "old-0"))
	tp, _ := e.meta.Topic("old")
	tp.Partitions = slices.Clone(tp.Partitions)
	tp.Partitions[0].Leader, tp.Partitions[0].LeaderEpoch = 2, 2
	tp.Partitions[0].ISR = []int32{2, 1}
	e.meta.setChanged(tp, []int32{0})
	waitUntil(t, "an OffsetForLeaderEpoch request to the older leader", func() bool {
		leader.mu.Lock()
		defer leader.mu.Unlock()
		return slices.Contains(leader.others, "*kmsg.OffsetForLeaderEpochRequest")
	})
	leader.mu.Lock()
	defer leader.mu.Unlock()
	for _, rp := range leader.fetches {
		if rp.Partition == 0 {
			t.Fatalf("the follower fetched old-0 from offset %d before truncating by OffsetForLeaderEpoch", rp.FetchOffset)
		}
	}
}

// mustAppend appends a batch of n records to l as its leader at epoch,
// recording the epoch's start first as a new leader does.
func mustAppend(t *testing.T, l *storage.Log, epoch int32, n int) {
	t.Helper()
	if err := l.AssignEpochStartOffset(epoch, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(testBatch(n), epoch); err != nil {
		t.Fatal(err)
	}
}
