package broker

// Fetch (key 1); versions: see the registration below.
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
// Fetch sessions (KIP-227, fetchsession.go) decide which partitions a
// request reads (an incremental fetch: every partition of its session) and
// which the response lists. Topics are named up to v12 and identified by
// topic id from v13 (UNKNOWN_TOPIC_ID if unknown). From v16 a partition
// answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH names its current
// leader, and node_endpoints that leader's endpoint (KIP-951).
// From v12 a partition may name the epoch of the client's last fetched
// batch: a client whose log diverges from this one is answered a
// diverging_epoch instead of records (checkDiverging).
// v18 adds a follower's known high watermark (KIP-1166, a tagged field, so
// Kafka's leader can answer a parked follower fetch when the high watermark
// moves); Strait's followers do not send it and the leader ignores it, so
// v18 answers as v17.
//
// Fetching from the closest replica (KIP-392): from v11 a consumer may fetch
// from a follower, which serves it up to its own high watermark (from v4 to
// v10, and for replicas, only the leader serves: NOT_LEADER_OR_FOLLOWER).
// With replica.selector.class set to RackAwareReplicaSelector, the leader
// answers a consumer's partition whose rack_id names the rack of an in-sync
// follower (and not its own) with that follower as preferred_read_replica,
// its offsets and no records, at once (replication.Partition's
// PreferredReadReplica, Kafka's ReplicaManager.findPreferredReadReplica).
//
// A consumer on the same host (a loopback connection) gets its responses
// without BBR's pacing (newConn calls unpaceLoopback, sendfile_linux.go).

import (
	"math/bits"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/protocol"
	"github.com/strait/strait/replication"
	"github.com/strait/strait/storage"
)

func init() { register(kmsg.Fetch, 4, 18, handleFetch) }

// fetchTarget is one requested partition, resolved once.
type fetchTarget struct {
	t, p   int // indexes into the response
	part   *replication.Partition
	code   int16
	offset int64
	max    int64
	epoch  int32
	// logStart is a follower's log start offset (-1 from a consumer).
	logStart int64
	// preferred: the partition is answered with a preferred read
	// replica and read no further.
	preferred bool
	// lastFetchedEpoch is the epoch of the client's last fetched batch
	// (v12+, -1: not given); diverging: the log diverges from the
	// client's there, and the partition is answered with a
	// diverging_epoch and no records (checkDiverging).
	lastFetchedEpoch int32
	diverging        bool
}

// fetchScratch is a fetch's per-partition arrays. A fetch over 10,000
// partitions (a consumer's or a follower's session) needs 4 MB of them,
// mostly response entries, dropped once the response is encoded: pools
// hand them to the next fetch of about as many partitions rather than to
// the garbage collector.
type fetchScratch struct {
	targets    []fetchTarget
	chunks     []protocol.Chunk
	partitions []kmsg.FetchResponseTopicPartition
	records    [][]protocol.Chunk
	groups     [][][]protocol.Chunk
	topics     []kmsg.FetchResponseTopic
	// n and ngroups are what the fetch used: recycle clears that much.
	n, ngroups int
}

// minPooledFetch is the fewest partitions a fetch takes its arrays from
// fetchScratchPools for; fetchScratchPools[k] holds those of fetches of
// 2^k to 2^(k+1)-1 partitions, so an array cleared and reused is less
// than twice the fetch's size.
const minPooledFetch = 128

var fetchScratchPools [32]sync.Pool // of *fetchScratch

// poolClass is the pool of fetchScratchPools (or sessionPartitionPools)
// for arrays of n entries.
func poolClass(n int) int { return bits.Len(uint(n)) - 1 }

// takeFetchScratch returns empty arrays for a fetch of n partitions in
// groups topics.
func takeFetchScratch(n, groups int) *fetchScratch {
	var fs *fetchScratch
	if n >= minPooledFetch {
		fs, _ = fetchScratchPools[poolClass(n)].Get().(*fetchScratch)
	}
	if fs == nil {
		fs = &fetchScratch{}
	}
	if cap(fs.targets) < n {
		fs.targets = make([]fetchTarget, 0, n)
		fs.chunks = make([]protocol.Chunk, 0, n)
		fs.partitions = make([]kmsg.FetchResponseTopicPartition, 0, n)
		fs.records = make([][]protocol.Chunk, n)
	}
	if cap(fs.groups) < groups {
		fs.groups = make([][][]protocol.Chunk, 0, groups)
		fs.topics = make([]kmsg.FetchResponseTopic, 0, groups)
	}
	fs.n, fs.ngroups = n, groups
	return fs
}

// recycle hands the fetch's arrays to a later fetch once its response is
// encoded (or dropped) and nothing reads its targets any more, cleared:
// they point at partitions, segment files and topic names.
func (f *fetchOp) recycle() {
	if f.ctx.kind == fetchIncremental {
		recycleSessionPartitions(f.ctx.parts)
		f.ctx.parts = nil
	}
	fs := f.scratch
	if fs == nil || fs.n < minPooledFetch {
		f.scratch = nil
		return
	}
	if cap(f.chunks) > cap(fs.chunks) {
		fs.chunks = f.chunks // grown by reads of several slices a partition
	}
	f.scratch, f.targets, f.chunks, f.records, f.resp = nil, nil, nil, nil, nil
	clear(fs.targets[:fs.n])
	clear(fs.partitions[:fs.n])
	clear(fs.records[:fs.n])
	clear(fs.chunks[:cap(fs.chunks)])
	clear(fs.groups[:fs.ngroups])
	clear(fs.topics[:fs.ngroups])
	fs.targets, fs.chunks, fs.partitions = fs.targets[:0], fs.chunks[:0], fs.partitions[:0]
	fs.groups, fs.topics = fs.groups[:0], fs.topics[:0]
	fetchScratchPools[poolClass(fs.n)].Put(fs)
}

type fetchOp struct {
	srv     *Server
	scratch *fetchScratch // the arrays below come from (see recycle)
	c       *conn
	x       *exchange
	req     *kmsg.FetchRequest
	resp    *kmsg.FetchResponse
	ctx     *fetchContext // the request's fetch session context (fetchsession.go)
	targets []fetchTarget
	records [][][]protocol.Chunk
	chunks  []protocol.Chunk // backing store of records' chunks, refilled by each read
	// reads hold the segment files chunks send from open (storage's
	// ReadResult.Release): released by the next read, or once the
	// response is written or dropped.
	reads  []storage.ReadResult
	hasErr bool
	// waitForFiles: the last read returned no records because reads were
	// declined at the segment files' descriptor bound (read).
	waitForFiles bool
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
	f.ctx = c.srv.fetchSessions.newContext(req, x.req.Version, f.replica >= 0)
	if f.ctx.kind == fetchSessionError {
		resp.ErrorCode = f.ctx.errCode
		x.respondChunks(protocol.AppendFetchResponse(nil, x.req, resp, func(int, int) []protocol.Chunk { return nil }))
		return
	}
	// The context holds the partitions, each once; a request naming one
	// partition 500,000 times must not keep its decoded list alive while it
	// waits (park) for data.
	req.Topics, req.ForgottenTopics = nil, nil
	f.resolve()
	f.preferReadReplicas()
	f.checkDiverging()
	f.fetchQuotaMaxBytes()
	if f.replica >= 0 {
		f.recordFollowerFetch()
	}
	if f.read() || req.MaxWaitMillis <= 0 {
		f.finish()
		f.recycle()
		return
	}
	// Refused only once Close has drained the connections.
	if !c.srv.bg.Go(f.park) {
		f.park()
	}
}

// resolve builds the response skeleton and the list of partitions to read,
// from the fetch context's partitions: one response topic per group.
func (f *fetchOp) resolve() {
	s := f.srv
	byID := f.x.req.Version >= 13
	parts := f.ctx.parts
	groups := 0
	for i := range parts {
		if i == 0 || parts[i].group != parts[i-1].group {
			groups++
		}
	}
	// One array each for every partition's target, response entry and
	// record chunks, rather than one per partition, taken from an earlier
	// fetch (recycle).
	total := len(parts)
	f.scratch = takeFetchScratch(total, groups)
	f.targets = f.scratch.targets
	f.chunks = f.scratch.chunks
	partitions := f.scratch.partitions
	records := f.scratch.records[:total]
	f.records = f.scratch.groups
	f.resp.Topics = f.scratch.topics
	for i := 0; i < len(parts); {
		j := i + 1
		for j < len(parts) && parts[j].group == parts[i].group {
			j++
		}
		group := parts[i:j]
		ti := len(f.resp.Topics)
		st := kmsg.NewFetchResponseTopic()
		st.Partitions = partitions[len(partitions) : len(partitions) : len(partitions)+len(group)]
		st.Topic, st.TopicID = group[0].topic, group[0].topicID
		var lt *replication.Topic
		topicCode := int16(0)
		if byID {
			lt = s.replicas.TopicByID(st.TopicID)
			if lt == nil {
				if t, ok := s.ctrl.TopicByID(st.TopicID); ok {
					st.Topic = t.Name
					topicCode = kerr.NotLeaderForPartition.Code
				} else {
					topicCode = kerr.UnknownTopicID.Code
				}
			} else {
				st.Topic = lt.Name()
			}
		} else {
			lt = s.replicas.TopicByName(st.Topic)
		}
		if topicCode != kerr.UnknownTopicID.Code && f.c.fetchDenied(f.replica, st.Topic) { // authorize.go
			topicCode = kerr.TopicAuthorizationFailed.Code
		}
		f.records = append(f.records, records[:len(group):len(group)])
		records = records[len(group):]
		for pi, fp := range group {
			// Built in place: at 10,000 partitions a fetch, a copy of
			// each entry is a measurable part of the fetch's cost.
			st.Partitions = st.Partitions[:pi+1]
			sp := &st.Partitions[pi]
			sp.Default()
			sp.Partition = fp.partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.PreferredReadReplica = -1
			ft := fetchTarget{t: ti, p: pi, offset: fp.fetchOffset, max: int64(fp.maxBytes), epoch: fp.leaderEpoch,
				logStart: fp.logStartOffset, lastFetchedEpoch: -1}
			if f.x.req.Version >= 12 {
				ft.lastFetchedEpoch = fp.lastFetchedEpoch
			}
			switch {
			case topicCode != 0:
				ft.code = topicCode
			default:
				ft.part = lt.Partition(fp.partition)
				if ft.part == nil {
					ft.code = s.missingPartitionCode(st.Topic, fp.partition)
				} else {
					ft.code = checkReplica(ft.part, fp.leaderEpoch, f.leaderOnly())
				}
			}
			if ft.code != 0 {
				sp.ErrorCode = ft.code
				f.hasErr = true
			}
			f.targets = append(f.targets, ft)
		}
		partitions = partitions[:len(partitions)+len(st.Partitions)]
		f.resp.Topics = append(f.resp.Topics, st)
		i = j
	}
}

// checkDiverging is Kafka's check of a fetch's last fetched epoch
// (Partition.readRecords, Fetch v12+, replicas and consumers alike): the
// end of that epoch in this log, as OffsetForLeaderEpoch answers it
// (storage.Log.EndOffsetForEpoch). If this log holds no such epoch, or the
// fetch offset is below its log start, the partition is
// OFFSET_OUT_OF_RANGE; if it has only an older epoch, or the epoch ends
// before the fetch offset, the client's log diverges from this one there:
// the partition is answered with that epoch and end offset as its
// diverging_epoch, its offsets and no records, at once, and the client
// truncates (a follower then needs no OffsetForLeaderEpoch round when it
// starts following, KIP-595's truncation on fetch). A partition answered
// with a preferred read replica is not checked, as in Kafka.
func (f *fetchOp) checkDiverging() {
	for i := range f.targets {
		ft := &f.targets[i]
		if ft.code != 0 || ft.part == nil || ft.preferred || ft.lastFetchedEpoch < 0 {
			continue
		}
		log := ft.part.Log()
		sp := &f.resp.Topics[ft.t].Partitions[ft.p]
		epoch, end := log.EndOffsetForEpoch(ft.lastFetchedEpoch)
		switch {
		case epoch < 0 || end < 0 || ft.offset < log.LogStartOffset():
			ft.code = kerr.OffsetOutOfRange.Code
			sp.ErrorCode = ft.code
			f.hasErr = true
		case epoch < ft.lastFetchedEpoch || end < ft.offset:
			ft.diverging = true
			sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = epoch, end
		}
	}
}

// recordFollowerFetch checks a follower's fetch and records its position on
// each partition: a replica id that is not a live broker at the given
// broker epoch, or not a replica of the partition, is refused with
// NOT_LEADER_OR_FOLLOWER (only brokers replicate, Kafka's
// followerReplicaOrThrow), with one log line per request.
func (f *fetchOp) recordFollowerFetch() {
	s := f.srv
	live := s.replicas.BrokerLive(f.replica, f.brokerEpoch)
	refused := 0
	for i := range f.targets {
		ft := &f.targets[i]
		if ft.code != 0 || ft.part == nil {
			continue
		}
		// A diverging follower's fetch offset is not a position in
		// this log: it is checked, not recorded (Kafka updates the
		// follower's fetch state only without a diverging epoch), or
		// the high watermark could count records the leader never had.
		var ok bool
		if ft.diverging {
			ok = live && ft.part.HasFollower(f.replica)
		} else {
			ok = live && ft.part.FollowerFetched(f.replica, f.brokerEpoch, ft.offset, ft.logStart)
		}
		if !ok {
			ft.code, ft.diverging = kerr.NotLeaderForPartition.Code, false
			sp := &f.resp.Topics[ft.t].Partitions[ft.p]
			sp.ErrorCode = ft.code
			sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = -1, -1
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

// leaderOnly reports whether only the leader may serve this fetch: one
// from a replica, or from a consumer before v11, which gives no client
// metadata (Kafka's FetchParams.fetchOnlyLeader).
func (f *fetchOp) leaderOnly() bool { return f.replica >= 0 || f.x.req.Version < 11 }

// checkReplica validates that this broker may serve p at the client's
// epoch: as its leader (checkLeader), or, for a consumer that may read from
// a follower, as any replica at the client's leader epoch (Kafka's
// Partition.getLocalLog: the epoch checked first).
func checkReplica(p *replication.Partition, clientEpoch int32, leaderOnly bool) int16 {
	if leaderOnly {
		return checkLeader(p, clientEpoch)
	}
	st := p.State()
	if st == nil {
		return kerr.NotLeaderForPartition.Code
	}
	switch {
	case clientEpoch < 0:
	case clientEpoch > st.LeaderEpoch:
		return kerr.UnknownLeaderEpoch.Code
	case clientEpoch < st.LeaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	}
	return 0
}

// preferReadReplicas, with RackAwareReplicaSelector and a consumer's fetch
// naming its rack (v11+), marks each partition this broker leads that an
// in-sync follower in that rack should serve instead: the response names
// that follower and carries the partition's offsets but no records.
func (f *fetchOp) preferReadReplicas() {
	s := f.srv
	if f.replica >= 0 || f.x.req.Version < 11 || f.req.Rack == "" || !s.cfg.Replication.RackAwareSelector {
		return
	}
	var racks map[int32]string // live brokers with an endpoint on the client's listener
	rackOf := func(id int32) (string, bool) {
		if racks == nil {
			racks = map[int32]string{}
			for _, b := range s.ctrl.Brokers() {
				if _, ok := endpointFor(b, f.c.listener); ok && !b.Fenced {
					racks[b.NodeID] = b.Rack
				}
			}
		}
		r, ok := racks[id]
		return r, ok
	}
	for i := range f.targets {
		ft := &f.targets[i]
		if ft.code != 0 || ft.part == nil || !ft.part.IsLeader() {
			continue
		}
		if id := ft.part.PreferredReadReplica(f.req.Rack, ft.offset, rackOf); id >= 0 {
			ft.preferred = true
			f.resp.Topics[ft.t].Partitions[ft.p].PreferredReadReplica = id
		}
	}
}

// checkLeader validates that this broker leads p at the client's epoch
// (-1: no check), as Kafka does from Fetch v9 and ListOffsets v4.
func checkLeader(p *replication.Partition, clientEpoch int32) int16 {
	if !p.IsLeader() {
		return kerr.NotLeaderForPartition.Code
	}
	if clientEpoch < 0 {
		return 0
	}
	switch ours := p.LeaderEpoch(); {
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
	offsetsOnly, declined := false, false
	f.chunks = f.chunks[:0]
	f.releaseReads()
	for i := range f.targets {
		ft := &f.targets[i]
		if ft.code != 0 || ft.part == nil {
			continue
		}
		sp := &f.resp.Topics[ft.t].Partitions[ft.p]
		log := ft.part.Log()
		hw := log.HighWatermark()
		lso := min(log.LastStableOffset(), hw)
		if ft.preferred || ft.diverging {
			// Kafka skips the read and answers at once with the
			// partition's offsets.
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, lso, log.LogStartOffset()
			offsetsOnly = true
			continue
		}
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
		if f.replica >= 0 && ft.part.ShouldLeaderThrottle(f.replica) {
			// A replica outside the ISR over the leader's replication
			// throttle: no records (the offsets still go out), and
			// nothing towards min_bytes (Kafka's DelayedFetch).
			upTo = min(upTo, ft.offset)
		}
		// The slices pin their files until the response is written: a
		// fetch over 100,000 partitions would pin a file each, past
		// RLIMIT_NOFILE, where reads fail and the embedded etcd's next
		// open stops the process. So a read that would have to open a
		// file once the files held by reads reach the descriptor bound
		// is declined, and the partition answered as one past the
		// response's max bytes is: offsets, no records (a session moves
		// the partitions that returned records to its end, so the
		// others come first next time). A fetch that read records
		// answers at once; one that read none for that reason waits
		// (park) for a held file's release, max_wait at most, rather
		// than answering empty to a client that would ask again at once.
		res, err := log.ReadWithinFileBound(ft.offset, max, upTo, minOne)
		declined = declined || res.Declined
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
		if len(res.Slices) > 0 {
			f.reads = append(f.reads, res)
		}
		start := len(f.chunks)
		for _, sl := range res.Slices {
			f.chunks = append(f.chunks, protocol.Chunk{File: sl.File, Pos: sl.Pos, Len: sl.Len})
		}
		f.records[ft.t][ft.p] = f.chunks[start:len(f.chunks):len(f.chunks)]
		if res.Size > 0 {
			minOne = false
			total += res.Size
			remaining -= res.Size
		}
	}
	f.waitForFiles = declined && total == 0
	return errNow || offsetsOnly || declined && total > 0 || total >= int64(f.req.MinBytes)
}

// filesReleased is what a parked fetch waits on besides appends: a held
// segment file's release when its last read was declined at the bound,
// nothing (a nil channel) otherwise.
func (f *fetchOp) filesReleased() <-chan struct{} {
	if !f.waitForFiles {
		return nil
	}
	return f.srv.replicas.FileCache().HeldBelowBound()
}

// park waits for appends to any requested partition until min_bytes is met,
// max_wait expires, the connection dies or the broker shuts down.
func (f *fetchOp) park() {
	defer f.recycle() // last: the waiters' removal below reads the targets
	f.srv.parkedFetches.Add(1)
	defer f.srv.parkedFetches.Add(-1)
	w := replication.NewFetchWaiter()
	for _, ft := range f.targets {
		if ft.part != nil && ft.code == 0 {
			ft.part.AddFetchWaiter(w)
		}
	}
	defer func() {
		for _, ft := range f.targets {
			if ft.part != nil && ft.code == 0 {
				ft.part.RemoveFetchWaiter(w)
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
		case <-w.Wake():
			if f.read() {
				f.finish()
				return
			}
		case <-f.filesReleased():
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

// finish lets the fetch session see the response (a full fetch creates
// one, an incremental one keeps only what changed) and answers.
func (f *fetchOp) finish() {
	recordBytes := func(t, p int) int64 {
		var n int64
		for _, ch := range f.records[t][p] {
			n += ch.Size()
		}
		return n
	}
	f.pointToLeaders()
	if f.replica >= 0 {
		// The bytes of leader-throttled partitions served to a follower
		// count against the leader's replication throttle (throttled or
		// not this time, in sync or not, as KafkaApis records them).
		for _, ft := range f.targets {
			if ft.part != nil && ft.code == 0 && ft.part.LeaderThrottled() {
				ft.part.RecordLeaderBytes(recordBytes(ft.t, ft.p))
			}
		}
	}
	resp, records := f.resp, f.records
	if keep := f.srv.fetchSessions.finishSession(f.ctx, f.resp, recordBytes, f.replica >= 0, f.x.req.Version >= 13); keep != nil {
		resp, records = keepPartitions(f.resp, f.records, keep)
	}
	resp.ThrottleMillis = max(resp.ThrottleMillis, f.x.throttleMs)
	chunks := protocol.AppendFetchResponse(nil, f.x.req, resp, func(t, p int) []protocol.Chunk {
		return records[t][p]
	})
	if f.fetchQuota(chunks) {
		// Throttled: answered empty, as Kafka's getThrottledResponse.
		empty := f.req.ResponseKind().(*kmsg.FetchResponse)
		empty.SetVersion(f.x.req.Version)
		if f.ctx.kind == fetchIncremental && f.ctx.session != nil {
			empty.SessionID = f.resp.SessionID
		}
		empty.ThrottleMillis = f.x.throttleMs
		chunks = protocol.AppendFetchResponse(nil, f.x.req, empty, func(int, int) []protocol.Chunk { return nil })
		f.releaseReads()
	} else {
		f.countBytesOut(recordBytes)
	}
	if reads := f.reads; len(reads) > 0 {
		f.reads = nil
		f.x.onRelease = func() {
			for i := range reads {
				reads[i].Release()
			}
		}
	}
	f.x.respondChunks(chunks)
}

// releaseReads lets the segment files of the last read close.
func (f *fetchOp) releaseReads() {
	for i := range f.reads {
		f.reads[i].Release()
	}
	f.reads = f.reads[:0]
}

// countBytesOut adds the records answered to their topics' BytesOut.
func (f *fetchOp) countBytesOut(recordBytes func(t, p int) int64) {
	for i := range f.targets {
		ft := &f.targets[i]
		if ft.part == nil {
			continue
		}
		if n := recordBytes(ft.t, ft.p); n > 0 {
			f.srv.metrics.Topic(ft.part.Topic()).BytesOut.Add(float64(n))
		}
	}
}

// pointToLeaders, from Fetch v16 (KIP-951), names the current leader and
// leader epoch of every partition answered NOT_LEADER_OR_FOLLOWER or
// FENCED_LEADER_EPOCH, and lists those leaders in node_endpoints on the
// client's listener, so a consumer goes to the new leader without waiting
// for a metadata refresh. As Kafka's KafkaApis.handleFetchRequest
// (getCurrentLeader): the partition's state on this broker when it hosts
// it, else the metadata; a leader that is not a live broker is named
// without an endpoint.
func (f *fetchOp) pointToLeaders() {
	if f.x.req.Version < 16 {
		return
	}
	var leaders map[int32]bool
	for i := range f.targets {
		ft := &f.targets[i]
		rt := &f.resp.Topics[ft.t]
		sp := &rt.Partitions[ft.p]
		if sp.ErrorCode != kerr.NotLeaderForPartition.Code && sp.ErrorCode != kerr.FencedLeaderEpoch.Code {
			continue
		}
		id, epoch := f.srv.currentLeader(ft.part, rt.Topic, sp.Partition)
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = id, epoch
		if id >= 0 {
			if leaders == nil {
				leaders = map[int32]bool{}
			}
			leaders[id] = true
		}
	}
	for _, b := range f.srv.leaderEndpoints(leaders, f.c.listener, nil) {
		nb := kmsg.NewFetchResponseBroker()
		nb.NodeID, nb.Host, nb.Port, nb.Rack = b.NodeID, b.Host, b.Port, b.Rack
		f.resp.Brokers = append(f.resp.Brokers, nb)
	}
}

// currentLeader is a partition's leader and leader epoch: from its state on
// this broker if hosted here, else from the metadata; -1, -1 if unknown.
func (s *Server) currentLeader(p *replication.Partition, topic string, idx int32) (leader, epoch int32) {
	if p != nil {
		if st := p.State(); st != nil {
			return st.Leader, st.LeaderEpoch
		}
	}
	if t, ok := s.ctrl.Topic(topic); ok && idx >= 0 && int(idx) < len(t.Partitions) {
		return t.Partitions[idx].Leader, t.Partitions[idx].LeaderEpoch
	}
	return -1, -1
}

// keepPartitions is resp with only the partitions keep selects, those of
// one topic that end up next to each other in one topic entry, as Kafka's
// FetchResponse lays them out.
func keepPartitions(resp *kmsg.FetchResponse, records [][][]protocol.Chunk, keep func(t, p int) bool) (*kmsg.FetchResponse, [][][]protocol.Chunk) {
	out := *resp
	out.Topics = nil
	var outRecords [][][]protocol.Chunk
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		for pi := range rt.Partitions {
			if !keep(ti, pi) {
				continue
			}
			n := len(out.Topics)
			if n == 0 || out.Topics[n-1].Topic != rt.Topic || out.Topics[n-1].TopicID != rt.TopicID {
				nt := *rt
				nt.Partitions = nil
				out.Topics = append(out.Topics, nt)
				outRecords = append(outRecords, nil)
				n++
			}
			out.Topics[n-1].Partitions = append(out.Topics[n-1].Partitions, rt.Partitions[pi])
			outRecords[n-1] = append(outRecords[n-1], records[ti][pi])
		}
	}
	return &out, outRecords
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
