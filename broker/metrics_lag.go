package broker

// Consumer lag of the groups this broker coordinates, for every partition
// they committed, wherever it is led: kafka-exporter's and Burrow's
// semantics, lag = the partition's latest offset (ListOffsets latest,
// read_uncommitted: the leader's high watermark) minus the committed
// offset. A partition this broker leads is read from its log; the others'
// high watermarks are asked of their leaders with ListOffsets over the
// inter-broker client, one request per leader (split in chunks), the
// leaders in parallel. Each group's lag is exported by its coordinator
// only, so each (group, topic, partition) appears once cluster-wide.
//
// What is asked of other brokers is bounded: in time by lagLookupTimeout
// (a leader that does not answer leaves its partitions' lag unknown for
// that scrape, counted in strait_consumergroup_lag_unknown_partitions,
// and /metrics answers anyway), in memory by lagMaxRemote partitions per
// lookup, and in rate by a cache of lagCacheTTL that scrapes arriving
// together (several Prometheus servers, the console) share; concurrent
// scrapes wait for the one lookup in flight instead of sending their own.

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/coordinator/group"
)

var (
	// lagCacheTTL is how long the leaders' answers serve later scrapes:
	// under any sensible scrape interval, so a scrape never shows lag
	// older than the previous scrape's.
	lagCacheTTL = time.Second
	// lagLookupTimeout bounds one lookup, all leaders together; with the
	// etcd check (2 s, run meanwhile) it keeps a scrape under Prometheus'
	// default 10 s scrape_timeout.
	lagLookupTimeout = 2 * time.Second
	// lagMaxRemote bounds the partitions led elsewhere asked for in one
	// lookup (and so the cache); beyond it the rest are unknown.
	lagMaxRemote = 1 << 18
	// lagChunk is the most partitions in one ListOffsets request.
	lagChunk = 5000
)

// lagEnds caches the high watermarks of partitions other brokers lead.
type lagEnds struct {
	mu       sync.Mutex
	at       time.Time                // when ends was fetched
	ends     map[topicPartition]int64 // the last lookup's answers
	inflight chan struct{}            // non-nil while a lookup runs; closed at its end
}

// groupOffsets is what the collector reads of the coordinator once per
// scrape: every group's stats, and the partitions they committed.
type groupOffsets struct {
	groups []group.GroupStat
	want   map[topicPartition]struct{}
}

func (s *Server) groupOffsets() groupOffsets {
	g := groupOffsets{want: map[topicPartition]struct{}{}}
	if s.groupSvc == nil {
		return g
	}
	s.groupSvc.coord.Stats(func(st group.GroupStat) {
		g.groups = append(g.groups, st)
		for _, o := range st.Committed {
			g.want[topicPartition{o.Topic, o.Partition}] = struct{}{}
		}
	})
	return g
}

// partitionEnds returns the high watermark of each partition of want it
// could learn: from the local log for those this broker leads, from their
// leaders for the others. local is localPartitions()'s.
func (s *Server) partitionEnds(want map[topicPartition]struct{}, local map[string]map[int32]localPartition) map[topicPartition]int64 {
	out := make(map[topicPartition]int64, len(want))
	byLeader := map[int32][]topicPartition{}
	remote := 0
	for tp := range want {
		t, ok := s.ctrl.Topic(tp.topic)
		if !ok || tp.partition < 0 || int(tp.partition) >= len(t.Partitions) {
			continue // deleted, or never there: no end to measure against
		}
		leader := t.Partitions[tp.partition].Leader
		switch {
		case leader == s.cfg.NodeID:
			if lp, ok := local[tp.topic][tp.partition]; ok {
				out[tp] = lp.hw
			}
		case leader >= 0 && remote < lagMaxRemote:
			byLeader[leader] = append(byLeader[leader], tp)
			remote++
		}
	}
	if len(byLeader) == 0 {
		return out
	}
	for tp, end := range s.remoteEnds(byLeader) {
		if _, ok := want[tp]; ok {
			out[tp] = end
		}
	}
	return out
}

// remoteEnds returns the cached answers while they are fresh, else asks
// the leaders (or waits for the lookup another scrape started).
func (s *Server) remoteEnds(byLeader map[int32][]topicPartition) map[topicPartition]int64 {
	c := &s.lagEnds
	for {
		c.mu.Lock()
		if c.ends != nil && time.Since(c.at) < lagCacheTTL {
			ends := c.ends
			c.mu.Unlock()
			return ends
		}
		if wait := c.inflight; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-s.closing:
				return nil
			}
		}
		done := make(chan struct{})
		c.inflight = done
		c.mu.Unlock()

		ends := s.askLeaders(byLeader)
		c.mu.Lock()
		c.ends, c.at, c.inflight = ends, time.Now(), nil
		c.mu.Unlock()
		close(done)
		return ends
	}
}

// askLeaders sends each leader a ListOffsets (latest, read_uncommitted)
// for its partitions, in parallel, within lagLookupTimeout.
func (s *Server) askLeaders(byLeader map[int32][]topicPartition) map[topicPartition]int64 {
	ctx, cancel := context.WithTimeout(context.Background(), lagLookupTimeout)
	defer cancel()
	go func() { // a broker closing does not wait out the timeout
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	var mu sync.Mutex
	out := map[topicPartition]int64{}
	var wg sync.WaitGroup
	for leader, tps := range byLeader {
		wg.Go(func() {
			for len(tps) > 0 && ctx.Err() == nil {
				n := min(len(tps), lagChunk)
				got := s.listLatest(ctx, leader, tps[:n])
				mu.Lock()
				for tp, end := range got {
					out[tp] = end
				}
				mu.Unlock()
				tps = tps[n:]
			}
		})
	}
	wg.Wait()
	return out
}

// listLatest asks leader for the latest offsets of tps; a partition the
// leader answered with an error (it is no longer the leader, the topic
// went) is left out.
func (s *Server) listLatest(ctx context.Context, leader int32, tps []topicPartition) map[topicPartition]int64 {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = 0 // read_uncommitted: the high watermark, as kafka-exporter reads it
	topics := map[string]int{}
	for _, tp := range tps {
		i, ok := topics[tp.topic]
		if !ok {
			i = len(req.Topics)
			topics[tp.topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = tp.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = tp.partition, -1, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	raw, err := s.sendToBroker(ctx, leader, req)
	if err != nil {
		s.logger.Debug("consumer lag: the leader's end offsets unknown", "broker", leader, "partitions", len(tps), "err", err)
		return nil
	}
	resp, ok := raw.(*kmsg.ListOffsetsResponse)
	if !ok {
		return nil
	}
	out := make(map[topicPartition]int64, len(tps))
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode == 0 && rp.Offset >= 0 {
				out[topicPartition{rt.Topic, rp.Partition}] = rp.Offset
			}
		}
	}
	return out
}
