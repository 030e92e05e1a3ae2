package broker

// Fetch (key 1), versions 4-17.
//
// Each requested partition is read from its log up to the high watermark
// (read_committed: the last stable offset, and the response lists the
// aborted transactions overlapping what it returns, from the transaction
// index) as file regions, never as bytes in memory; the response is laid out
// by protocol.AppendFetchResponse and the regions go to the socket with
// sendfile. The first partition that has data may exceed the byte limits by
// one batch (KIP-74); after it, partition_max_bytes and the remaining
// max_bytes bound each read. With fewer than min_bytes available and
// max_wait > 0, the fetch parks until an append to one of its partitions, the
// wait expires, or the broker shuts down; the connection's read loop goes on
// meanwhile and the response keeps its place in the write order.
//
// Fetch sessions (KIP-227) are not kept: a request to create one is answered
// with session id 0, which clients take as "full fetches from now on"; an
// incremental request gets FETCH_SESSION_ID_NOT_FOUND. Topics are named up to
// v12 and identified by topic id from v13 (UNKNOWN_TOPIC_ID if unknown).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/protocol"
	"github.com/strait/strait/storage"
)

// fetchTarget is one requested partition, resolved once.
type fetchTarget struct {
	t, p   int // indexes into the response
	part   *partition
	code   int16
	offset int64
	max    int64
	epoch  int32
}

type fetchOp struct {
	srv     *Server
	c       *conn
	x       *exchange
	req     *kmsg.FetchRequest
	resp    *kmsg.FetchResponse
	targets []fetchTarget
	records [][][]protocol.Chunk
	hasErr  bool
	// replica is the fetching follower's broker id, -1 for a consumer.
	replica     int32
	brokerEpoch int64
}

func handleFetch(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.FetchRequest)
	f := &fetchOp{srv: c.srv, c: c, x: x, req: req, replica: req.ReplicaID, brokerEpoch: -1}
	if x.req.Version >= 15 {
		f.replica, f.brokerEpoch = req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.SetVersion(x.req.Version)
	f.resp = resp
	if req.SessionID != 0 || req.SessionEpoch > 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		x.respondChunks(protocol.AppendFetchResponse(nil, x.req, resp, func(int, int) []protocol.Chunk { return nil }))
		return
	}
	f.resolve()
	if f.replica >= 0 {
		f.recordFollowerFetch()
	}
	if f.read() || req.MaxWaitMillis <= 0 {
		f.finish()
		return
	}
	go f.park()
}

// resolve builds the response skeleton and the list of partitions to read.
func (f *fetchOp) resolve() {
	s := f.srv
	byID := f.x.req.Version >= 13
	f.records = make([][][]protocol.Chunk, len(f.req.Topics))
	for ti, rt := range f.req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var lt *localTopic
		topicCode := int16(0)
		if byID {
			lt = s.parts.topicByID(rt.TopicID)
			if lt == nil {
				if t, ok := s.ctrl.TopicByID(rt.TopicID); ok {
					st.Topic = t.Name
					topicCode = kerr.NotLeaderForPartition.Code
				} else {
					topicCode = kerr.UnknownTopicID.Code
				}
			} else {
				st.Topic = lt.name
			}
		} else {
			lt = s.parts.topicByName(rt.Topic)
		}
		f.records[ti] = make([][]protocol.Chunk, len(rt.Partitions))
		for pi, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.PreferredReadReplica = -1
			ft := fetchTarget{t: ti, p: pi, offset: rp.FetchOffset, max: int64(rp.PartitionMaxBytes), epoch: rp.CurrentLeaderEpoch}
			switch {
			case topicCode != 0:
				ft.code = topicCode
			default:
				ft.part = lt.partition(rp.Partition)
				if ft.part == nil {
					ft.code = s.missingPartitionCode(st.Topic, rp.Partition)
				} else {
					ft.code = checkLeader(ft.part, s.cfg.NodeID, rp.CurrentLeaderEpoch)
				}
			}
			if ft.code != 0 {
				sp.ErrorCode = ft.code
				f.hasErr = true
			}
			st.Partitions = append(st.Partitions, sp)
			f.targets = append(f.targets, ft)
		}
		f.resp.Topics = append(f.resp.Topics, st)
	}
}

// recordFollowerFetch checks a follower's fetch and records its position on
// each partition: a replica id that is not a live broker at the given
// broker epoch, or not a replica of the partition, is refused with
// NOT_LEADER_OR_FOLLOWER (only brokers replicate, Kafka's
// followerReplicaOrThrow), with one log line per request.
func (f *fetchOp) recordFollowerFetch() {
	s := f.srv
	live := s.brokerLive(f.replica, f.brokerEpoch)
	refused := 0
	for i := range f.targets {
		ft := &f.targets[i]
		if ft.code != 0 || ft.part == nil {
			continue
		}
		if !live || !s.followerFetched(ft.part, f.replica, f.brokerEpoch, ft.offset) {
			ft.code = kerr.NotLeaderForPartition.Code
			f.resp.Topics[ft.t].Partitions[ft.p].ErrorCode = ft.code
			f.hasErr = true
			refused++
		}
	}
	if refused > 0 {
		s.logger.Warn("refused a replica fetch: not a live broker replicating these partitions",
			"replica_id", f.replica, "broker_epoch", f.brokerEpoch, "live", live, "partitions", refused,
			"remote", f.c.nc.RemoteAddr().String())
	}
}

// checkLeader validates that this broker leads p at the client's epoch
// (-1: no check), as Kafka does from Fetch v9 and ListOffsets v4.
func checkLeader(p *partition, node int32, clientEpoch int32) int16 {
	if !p.isLeader(node) {
		return kerr.NotLeaderForPartition.Code
	}
	if clientEpoch < 0 {
		return 0
	}
	switch ours := p.leaderEpoch(); {
	case clientEpoch > ours:
		return kerr.UnknownLeaderEpoch.Code
	case clientEpoch < ours:
		return kerr.FencedLeaderEpoch.Code
	}
	return 0
}

// read reads every healthy partition again and reports whether the fetch can
// complete now: enough bytes, or an error to report.
func (f *fetchOp) read() bool {
	remaining := int64(f.req.MaxBytes)
	if remaining <= 0 {
		remaining = 1<<31 - 1
	}
	var total int64
	minOne := true
	errNow := f.hasErr
	for i := range f.targets {
		ft := &f.targets[i]
		if ft.code != 0 || ft.part == nil {
			continue
		}
		sp := &f.resp.Topics[ft.t].Partitions[ft.p]
		log := ft.part.log
		hw := log.HighWatermark()
		lso := min(log.LastStableOffset(), hw)
		readCommitted := f.req.IsolationLevel == 1 && f.replica < 0
		upTo := hw
		switch {
		case f.replica >= 0:
			upTo = log.LogEndOffset() // followers copy everything
		case readCommitted:
			upTo = lso
		}
		max := ft.max
		if max > remaining {
			max = remaining
		}
		res, err := log.Read(ft.offset, max, upTo, minOne)
		if err == nil && readCommitted {
			err = f.setAbortedTransactions(sp, log, ft.offset, res)
		}
		if err != nil {
			code, _ := errorCode(err)
			sp.ErrorCode = code
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.AbortedTransactions = nil
			f.records[ft.t][ft.p] = nil
			errNow = true
			continue
		}
		sp.ErrorCode = 0
		sp.HighWatermark = hw
		sp.LastStableOffset = lso
		sp.LogStartOffset = res.LogStartOffset
		chunks := f.records[ft.t][ft.p][:0]
		for _, sl := range res.Slices {
			chunks = append(chunks, protocol.Chunk{File: sl.File, Pos: sl.Pos, Len: sl.Len})
		}
		f.records[ft.t][ft.p] = chunks
		if res.Size > 0 {
			minOne = false
			total += res.Size
			remaining -= res.Size
		}
	}
	return errNow || total >= int64(f.req.MinBytes)
}

// park waits for appends to any requested partition until min_bytes is met,
// max_wait expires, the connection dies or the broker shuts down.
func (f *fetchOp) park() {
	w := newFetchWaiter()
	for _, ft := range f.targets {
		if ft.part != nil && ft.code == 0 {
			ft.part.addWaiter(w)
		}
	}
	defer func() {
		for _, ft := range f.targets {
			if ft.part != nil && ft.code == 0 {
				ft.part.removeWaiter(w)
			}
		}
	}()
	timer := time.NewTimer(time.Duration(f.req.MaxWaitMillis) * time.Millisecond)
	defer timer.Stop()
	// Re-check once after registering: an append between the first read and
	// the registration would otherwise be missed until the timeout.
	if f.read() {
		f.finish()
		return
	}
	for {
		select {
		case <-w.wake:
			if f.read() {
				f.finish()
				return
			}
		case <-timer.C:
			f.read()
			f.finish()
			return
		case <-f.srv.closing:
			f.finish()
			return
		case <-f.c.dead:
			f.x.noResponse()
			return
		}
	}
}

func (f *fetchOp) finish() {
	chunks := protocol.AppendFetchResponse(nil, f.x.req, f.resp, func(t, p int) []protocol.Chunk {
		return f.records[t][p]
	})
	f.x.respondChunks(chunks)
}

// setAbortedTransactions fills a read_committed partition's aborted
// transactions overlapping the batches read (an empty list when none, as
// Kafka answers read_committed; read_uncommitted leaves it null).
func (f *fetchOp) setAbortedTransactions(sp *kmsg.FetchResponseTopicPartition, log *storage.Log, offset int64, res storage.ReadResult) error {
	sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	if res.Size == 0 {
		return nil
	}
	aborted, err := log.AbortedTransactions(offset, res.EndOffset)
	if err != nil {
		return err
	}
	for _, a := range aborted {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
		sp.AbortedTransactions = append(sp.AbortedTransactions, at)
	}
	return nil
}
