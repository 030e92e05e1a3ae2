package replication

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
)

// fakeSessionLeader is a leader's fetch session as the broker keeps it
// (KIP-227), checking the follower's requests against it: an incremental
// fetch must name the live session at its expected epoch and list only
// partitions that are new to the session or whose fetch offset moved.
type fakeSessionLeader struct {
	t     *testing.T
	batch []byte

	mu        sync.Mutex
	nextID    int32
	id, epoch int32
	parts     map[int32]int64 // session partition -> fetch offset
	fetches   int
	full      int     // full fetches seen
	idle      int     // incremental fetches that listed nothing
	forgotten []int32 // partitions forgotten, in order
	failAt    int     // the fetch answered FETCH_SESSION_ID_NOT_FOUND
	afterFail *kmsg.FetchRequest
}

func (l *fakeSessionLeader) fetch(r *kmsg.FetchRequest) *kmsg.FetchResponse {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fetches++
	if l.fetches == l.failAt+1 {
		l.afterFail = r
	}
	resp := kmsg.NewPtrFetchResponse()
	var topic string
	var topicID [16]byte
	for _, rt := range r.Topics {
		topic, topicID = rt.Topic, rt.TopicID
	}
	listed := map[int32]int64{}
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			listed[rp.Partition] = rp.FetchOffset
		}
	}
	if r.SessionEpoch == 0 {
		l.full++
		l.nextID++
		l.id, l.epoch, l.parts = l.nextID, 1, listed
		resp.SessionID = l.id
	} else {
		if r.SessionID != l.id || r.SessionEpoch != l.epoch {
			l.t.Errorf("fetch %d: session %d epoch %d, the leader's is %d at %d", l.fetches, r.SessionID, r.SessionEpoch, l.id, l.epoch)
			resp.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
			return resp
		}
		for p, off := range listed {
			if old, ok := l.parts[p]; ok && old == off {
				l.t.Errorf("fetch %d lists partition %d at %d, unchanged", l.fetches, p, off)
			}
			l.parts[p] = off
		}
		for _, ft := range r.ForgottenTopics {
			for _, p := range ft.Partitions {
				delete(l.parts, p)
				l.forgotten = append(l.forgotten, p)
			}
		}
		if len(listed) == 0 {
			l.idle++
		}
		l.epoch++
		resp.SessionID = l.id
	}
	if l.fetches == l.failAt {
		l.id = -1 // the session is gone
		return &kmsg.FetchResponse{Version: resp.Version, ErrorCode: kerr.FetchSessionIDNotFound.Code}
	}
	// Partition 0 has one batch at offset 0; the response lists it only
	// while the follower asks for it.
	if off, ok := l.parts[0]; ok && off == 0 {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = topic, topicID
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition, sp.HighWatermark, sp.RecordBatches = 0, 3, l.batch
		st.Partitions = append(st.Partitions, sp)
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// TestFollowerFetchSession: the follower's first fetch is full and asks for
// a session; the next are incremental on the leader's session with
// consecutive epochs and list only the partitions whose fetch offset moved
// (none when idle); a partition that follows another leader is forgotten;
// FETCH_SESSION_ID_NOT_FOUND makes the next fetch full, without a session id.
func TestFollowerFetchSession(t *testing.T) {
	leader := &fakeSessionLeader{t: t, batch: testBatch(3), failAt: 1 << 30}
	client := clientFunc(func(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
		switch r := req.(type) {
		case *kmsg.OffsetForLeaderEpochRequest:
			resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
			for _, rt := range r.Topics {
				st := kmsg.NewOffsetForLeaderEpochResponseTopic()
				st.Topic = rt.Topic
				for _, rp := range rt.Partitions {
					sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
					sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, rp.LeaderEpoch, 0
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, nil
		case *kmsg.FetchRequest:
			if broker != 2 {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			resp := leader.fetch(r)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(2 * time.Millisecond):
			}
			return resp, nil
		}
		t.Errorf("unexpected request %T", req)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	e := newEnv(t, nil, client)
	e.topic("s", []int32{2, 1}, []int32{2, 1}, []int32{2, 1})
	state := func() (parts map[int32]int64, fetches, full, idle int, forgotten []int32) {
		leader.mu.Lock()
		defer leader.mu.Unlock()
		return maps.Clone(leader.parts), leader.fetches, leader.full, leader.idle, append([]int32(nil), leader.forgotten...)
	}
	want := map[int32]int64{0: 3, 1: 0, 2: 0}
	waitUntil(t, "the session to hold every partition at the follower's offset, then idle fetches", func() bool {
		parts, _, _, idle, _ := state()
		return fmt.Sprint(parts) == fmt.Sprint(want) && idle >= 3
	})
	if p := e.m.Partition("s", 0); p.Log().LogEndOffset() != 3 {
		t.Fatalf("s-0 log end offset %d, want 3", p.Log().LogEndOffset())
	}

	// The session is lost: the next fetch is full.
	leader.mu.Lock()
	fullBefore := leader.full
	leader.failAt = leader.fetches + 1
	leader.mu.Unlock()
	waitUntil(t, "a full fetch after FETCH_SESSION_ID_NOT_FOUND", func() bool {
		leader.mu.Lock()
		defer leader.mu.Unlock()
		return leader.afterFail != nil
	})
	leader.mu.Lock()
	af := leader.afterFail
	leader.mu.Unlock()
	if af.SessionID != 0 || af.SessionEpoch != 0 {
		t.Errorf("fetch after FETCH_SESSION_ID_NOT_FOUND: session %d epoch %d, want a full fetch without id", af.SessionID, af.SessionEpoch)
	}
	if _, _, full, _, _ := state(); full != fullBefore+1 {
		t.Errorf("%d full fetches after the session was lost, want 1", full-fullBefore)
	}

	// s-2 follows broker 3 now: broker 2's session forgets it.
	e.meta.setPartition("s", 2, func(pi *controller.PartitionInfo) { pi.Leader = 3; pi.LeaderEpoch++; pi.Replicas = []int32{3, 1} })
	waitUntil(t, "s-2 forgotten", func() bool {
		parts, _, _, _, forgotten := state()
		return fmt.Sprint(forgotten) == "[2]" && fmt.Sprint(parts) == fmt.Sprint(map[int32]int64{0: 3, 1: 0})
	})
	_, fetches, _, idle, _ := state()
	waitUntil(t, "idle incremental fetches after", func() bool {
		_, _, _, idle2, _ := state()
		return idle2 >= idle+3
	})
	if _, f2, full, _, _ := state(); full != fullBefore+1 {
		t.Errorf("%d full fetches in %d fetches, want 1 (after the lost session)", full-fullBefore, f2-fetches)
	}
}
