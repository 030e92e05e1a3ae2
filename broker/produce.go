package broker

// Produce (key 0); versions: see the registration below. As Kafka 4 does,
// v0-2 are advertised for librdkafka's sake (KAFKA-18659) and refused by the
// protocol layer.
//
// Each partition's record set must be exactly one magic-v2 batch; storage
// validates it (CRC32C -> CORRUPT_MESSAGE, shape -> INVALID_RECORD, size ->
// MESSAGE_TOO_LARGE, timestamps -> INVALID_TIMESTAMP), checks an idempotent
// producer's epoch and sequence (INVALID_PRODUCER_EPOCH,
// OUT_OF_ORDER_SEQUENCE_NUMBER; a retry of one of its last 5 batches
// succeeds with the original offsets and appends nothing), assigns offsets
// and appends it. acks must be -1, 0 or 1 (else INVALID_REQUIRED_ACKS). With one
// replica, acks=all is satisfied as soon as the leader has appended; the
// high watermark then advances and parked fetches wake. acks=0 gets no
// response at all, and, as in Kafka, the connection is closed if any
// partition failed so the producer notices. Transactional batches are
// verified with the transaction coordinator first (txn_produce.go). From
// v13 (KIP-516) topics are named by id: each is named from its id first,
// and an id no topic has is UNKNOWN_TOPIC_ID on each of its partitions
// (after the transactional id's authorization, before the topic's, as
// Kafka's KafkaApis).

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/replication"
	"github.com/strait/strait/security/acl"
	"github.com/strait/strait/storage"
	"github.com/strait/strait/storage/compress"
)

func init() { registerAdvertised(kmsg.Produce, 0, 3, 13, handleProduce) }

func handleProduce(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ProduceRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	acksValid := req.Acks == -1 || req.Acks == 0 || req.Acks == 1
	txnDenied := c.produceTransactionDenied(req) // authorize.go
	var unknownIDs []kmsg.ProduceResponseTopic
	if x.req.Version >= 13 {
		unknownIDs = s.produceTopicIDs(req, txnDenied)
	}
	var txnCheck *txnProduce
	if acksValid && !txnDenied {
		txnCheck = s.verifyTransaction(req, x.req.Version)
	}
	// First the response skeleton and the checks that need no append, then
	// the appends (in parallel when worth it, appendAll), then the codes.
	n := 0
	for _, rt := range req.Topics {
		n += len(rt.Partitions)
	}
	// Sized once: a request to 10,000 partitions grew it 15 times.
	jobs := make([]produceJob, 0, n)
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for ti, rt := range req.Topics {
		st := &resp.Topics[ti]
		*st = kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		lt := s.replicas.TopicByName(rt.Topic)
		writeOK := c.authorizeTopic(acl.OpWrite, rt.Topic)
		for pi, rp := range rt.Partitions {
			sp := &st.Partitions[pi]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			sp.LogAppendTime = -1
			sp.LogStartOffset = -1
			job := produceJob{topic: ti, partition: pi, lt: lt, records: rp.Records}
			switch {
			case txnDenied:
				job.code = kerr.TransactionalIDAuthorizationFailed.Code
			case !writeOK:
				job.code = kerr.TopicAuthorizationFailed.Code
			case !acksValid:
				job.code = kerr.InvalidRequiredAcks.Code
			case x.req.Version < 7 && isZstd(rp.Records):
				// zstd needs Produce v7 (KIP-110), as Kafka enforces.
				job.code = kerr.UnsupportedCompressionType.Code
			case recordbatch.IsInternalTopic(rt.Topic) && clientID(x) != adminClientID:
				// Clients write the coordinators' topics only through the
				// coordinators, as in Kafka's ReplicaManager.
				job.code, job.msg = kerr.InvalidTopicException.Code, "Cannot append to internal topic "+rt.Topic
			}
			jobs = append(jobs, job)
		}
	}
	woke := s.appendAll(resp, jobs, req.Acks, txnCheck)
	// The fetches woken wait on this core until this goroutine blocks (Go
	// runs a goroutine it readies next, but does not switch to it), which a
	// producer with requests queued on the socket may not do for a whole
	// time slice (10 ms). Once the answer is out, this goroutine yields to
	// them: the records reach the consumers before the next request is
	// read. Kafka's request handler completes the fetches inline; here a
	// fetch's answer could block on a slow consumer's socket.
	if woke > 0 {
		defer runtime.Gosched()
	}
	anyErr := false
	var pending []pendingAck
	var leaders map[int32]bool // named in CurrentLeader fields (KIP-951)
	for _, j := range jobs {
		rt := &resp.Topics[j.topic]
		sp := &rt.Partitions[j.partition]
		if j.waiter != nil {
			pending = append(pending, pendingAck{topic: j.topic, partition: j.partition, part: j.lt.Partition(sp.Partition), w: j.waiter})
		}
		if j.code == 0 {
			continue
		}
		anyErr = true
		sp.ErrorCode = j.code
		if j.code == kerr.KafkaStorageError.Code {
			s.checkLogDirsSoon() // is the dir gone?
		}
		// Kafka answers a message only with a record validation
		// failure (ReplicaManager's hasCustomErrorMessage) and a failed
		// transaction verification.
		if j.msg != "" && x.req.Version >= 8 && (j.code == kerr.InvalidRecord.Code || j.code == kerr.InvalidTimestamp.Code || j.code == kerr.InvalidTxnState.Code) {
			msg := j.msg
			sp.ErrorMessage = &msg
		}
		if j.code == kerr.NotLeaderForPartition.Code && x.req.Version >= 10 {
			leaders = s.pointToLeader(rt.Topic, sp.Partition, &sp.CurrentLeader, leaders)
		}
	}
	resp.Topics = append(resp.Topics, unknownIDs...)
	anyErr = anyErr || len(unknownIDs) > 0
	resp.Brokers = s.leaderEndpoints(leaders, c.listener, resp.Brokers)
	if req.Acks == 0 {
		x.closeConn = anyErr
		x.noResponse()
		return
	}
	if len(pending) == 0 {
		x.respond(resp)
		return
	}
	// acks=all with followers: answer once the high watermark passes every
	// partition's records, or at timeout_ms (REQUEST_TIMED_OUT for those
	// not yet replicated, as Kafka's DelayedProduce); the read loop goes on.
	// Refused only once Close has drained the connections.
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if !s.bg.Go(func() { s.awaitProduceAcks(x, resp, pending, timeout) }) {
		s.awaitProduceAcks(x, resp, pending, timeout)
	}
}

// produceJob is one partition of a produce request: where its response
// goes, its records, and what became of them.
type produceJob struct {
	topic, partition int // indexes into the request and the response
	lt               *replication.Topic
	records          []byte
	code             int16 // before appendAll: a request-level check failed, no append
	msg              string
	waiter           *replication.AckWaiter // acks=all, waiting for followers
}

// parallelAppendBytes is the size of a produce request from which its
// partitions are appended in parallel. Below it a goroutine hand-off costs
// more than it saves.
var parallelAppendBytes = 256 << 10

// appendAll appends every job that passed the request-level checks. A
// request that writes at least parallelAppendBytes to several distinct
// partitions has them appended by up to GOMAXPROCS goroutines (this one
// included): validation (CRC32C, decompression of compressed batches) and
// the copy into the page cache then use every core for one producer's
// request, where Kafka's request handler appends them one after another.
// Partitions are independent logs with their own locks; a partition named
// twice keeps the request's order (the sequential path).
func (s *Server) appendAll(resp *kmsg.ProduceResponse, jobs []produceJob, acks int16, txnCheck *txnProduce) (woke int) {
	todo := make([]int, 0, len(jobs))
	total := 0
	for i := range jobs {
		if jobs[i].code == 0 {
			todo = append(todo, i)
			total += len(jobs[i].records)
		}
	}
	workers := 1
	if len(todo) > 1 && total >= parallelAppendBytes && distinctPartitions(resp, jobs, todo) {
		workers = min(runtime.GOMAXPROCS(0), len(todo))
	}
	if workers < 2 {
		for _, i := range todo {
			s.appendJob(resp, &jobs[i], acks, txnCheck)
		}
	} else {
		var next atomic.Int32
		work := func() {
			for {
				n := int(next.Add(1)) - 1
				if n >= len(todo) {
					return
				}
				s.appendJob(resp, &jobs[todo[n]], acks, txnCheck)
			}
		}
		var wg sync.WaitGroup
		for range workers - 1 {
			wg.Go(work)
		}
		work()
		wg.Wait()
	}
	// Every partition appended: now the parked fetches (AppendedNoWake).
	for _, i := range todo {
		if j := &jobs[i]; j.code == 0 {
			if p := j.lt.Partition(resp.Topics[j.topic].Partitions[j.partition].Partition); p != nil {
				woke += p.WakeFetches()
			}
		}
	}
	return woke
}

// appendJob appends one job's records and fills its response fields.
func (s *Server) appendJob(resp *kmsg.ProduceResponse, j *produceJob, acks int16, txnCheck *txnProduce) {
	rt := &resp.Topics[j.topic]
	sp := &rt.Partitions[j.partition]
	j.code, j.msg, j.waiter = s.produceTo(j.lt, rt.Topic, sp.Partition, j.records, acks, sp, txnCheck)
}

// distinctPartitions reports whether no partition is named twice among the
// jobs todo.
func distinctPartitions(resp *kmsg.ProduceResponse, jobs []produceJob, todo []int) bool {
	type key struct {
		topic     string
		partition int32
	}
	seen := make(map[key]struct{}, len(todo))
	for _, i := range todo {
		rt := &resp.Topics[jobs[i].topic]
		k := key{rt.Topic, rt.Partitions[jobs[i].partition].Partition}
		if _, dup := seen[k]; dup {
			return false
		}
		seen[k] = struct{}{}
	}
	return true
}

// pendingAck is one partition of a produce waiting for its followers.
type pendingAck struct {
	topic, partition int // indexes into the response
	part             *replication.Partition
	w                *replication.AckWaiter
}

func (s *Server) awaitProduceAcks(x *exchange, resp *kmsg.ProduceResponse, pending []pendingAck, timeout time.Duration) {
	s.parkedProduces.Add(1)
	defer s.parkedProduces.Add(-1)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	expired := false
	for _, pa := range pending {
		sp := &resp.Topics[pa.topic].Partitions[pa.partition]
		var code int16
		if expired {
			select {
			case code = <-pa.w.Done():
			default:
				code = kerr.RequestTimedOut.Code
			}
		} else {
			select {
			case code = <-pa.w.Done():
			case <-timer.C:
				expired = true
				code = kerr.RequestTimedOut.Code
			case <-s.closing:
				expired = true
				code = kerr.NotLeaderForPartition.Code
			}
		}
		if code != 0 {
			pa.part.DropAckWaiter(pa.w)
			sp.ErrorCode = code
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
		}
	}
	x.respond(resp)
}

// produceTo appends one partition's records and fills the response fields,
// returning an error code and message on failure.
func (s *Server) produceTo(lt *replication.Topic, topic string, idx int32, records []byte, acks int16, sp *kmsg.ProduceResponseTopicPartition, txnCheck *txnProduce) (int16, string, *replication.AckWaiter) {
	p := lt.Partition(idx)
	if p == nil {
		return s.missingPartitionCode(topic, idx), "", nil
	}
	if !p.IsLeader() {
		return kerr.NotLeaderForPartition.Code, "", nil
	}
	if code, msg, failed := txnCheck.failure(topic, idx); failed {
		return code, msg, nil
	}
	if acks == -1 && p.NotEnoughReplicas() {
		st := p.State()
		return kerr.NotEnoughReplicas.Code, fmt.Sprintf("The size of the current ISR %v is insufficient to satisfy the min.isr requirement of %d for partition %s-%d",
			st.ISR, p.MinISR(), topic, idx), nil
	}
	info, err := s.appendProduced(p, records, txnCheck, topic, idx)
	if err != nil {
		var ae *storage.AppendError
		if errors.As(err, &ae) {
			for _, re := range ae.RecordErrors {
				msg := re.Message
				sp.ErrorRecords = append(sp.ErrorRecords, kmsg.ProduceResponseTopicPartitionErrorRecord{
					RelativeOffset: re.BatchIndex, ErrorMessage: &msg,
				})
			}
		}
		code, msg := errorCode(err)
		if code == kerr.KafkaStorageError.Code && !p.IsLeader() {
			// The replica stopped under the append (moved to another log
			// dir, or its dir failed): the client retries elsewhere.
			return kerr.NotLeaderForPartition.Code, "", nil
		}
		switch code {
		case kerr.CorruptMessage.Code:
			msg = "" // Kafka answers CORRUPT_MESSAGE without a message
		case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.KafkaStorageError.Code:
		default:
			// Kafka's ReplicaManager answers the other refusals
			// (sequence, epoch, validation) with the log start offset.
			sp.LogStartOffset = p.Log().LogStartOffset()
		}
		if code == kerr.KafkaStorageError.Code || code == kerr.UnknownServerError.Code {
			// An AppendError is about the request (a batch that fails
			// validation, an unknown codec id): the client's doing, at
			// INFO; anything else is the broker's, at ERROR. Both at most
			// a line a second.
			if ae != nil {
				s.logLimited(&s.clientErrLog, slog.LevelInfo, "produce refused", "topic", topic, "partition", idx, "err", err)
			} else {
				s.logLimited(&s.produceErrLog, slog.LevelError, "produce failed", "topic", topic, "partition", idx, "err", err)
			}
		}
		return code, msg, nil
	}
	tm := s.metrics.Topic(topic)
	tm.MessagesIn.Add(float64(info.RecordCount))
	tm.BytesIn.Add(float64(len(records)))
	sp.BaseOffset = info.FirstOffset
	sp.LogAppendTime = info.LogAppendTime
	sp.LogStartOffset = info.LogStartOffset
	if acks == -1 {
		// A duplicate answers with its original offsets, which the high
		// watermark may have passed already.
		return 0, "", p.AwaitAcks(info.LastOffset + 1)
	}
	return 0, "", nil
}

// isZstd reports whether a produce partition's records start with a zstd
// batch: Produce v3-v6 may not use zstd (UNSUPPORTED_COMPRESSION_TYPE).
func isZstd(records []byte) bool {
	codec, ok := recordbatch.FirstBatchCompression(records)
	return ok && compress.Codec(codec) == compress.Zstd
}

// errorCode maps an error to its Kafka error code and message: storage and
// controller errors wrap *kerr.Error; anything else is an unknown server error.
func errorCode(err error) (int16, string) {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code, err.Error()
	}
	return kerr.UnknownServerError.Code, err.Error()
}

// adminClientID is the client id Kafka lets append to internal topics
// (AdminUtils.ADMIN_CLIENT_ID).
const adminClientID = "__admin_client"

// appendAsLeader appends records (one validated batch) to a partition this
// broker leads and makes them visible to fetches. Coordinators writing their
// internal topics use it too.
func (s *Server) appendAsLeader(p *replication.Partition, records []byte) (storage.AppendInfo, error) {
	info, err := p.Log().AppendAsLeader(records, p.LeaderEpoch())
	if err != nil {
		return info, err
	}
	p.Appended()
	return info, nil
}

// pointToLeader fills a NOT_LEADER_OR_FOLLOWER partition's current leader
// and epoch from the metadata (KIP-951, Produce v10+), so that clients go
// to the new leader without waiting for a metadata refresh; it notes the
// leader for leaderEndpoints.
func (s *Server) pointToLeader(topic string, idx int32, cl *kmsg.ProduceResponseTopicPartitionCurrentLeader, leaders map[int32]bool) map[int32]bool {
	t, ok := s.ctrl.Topic(topic)
	if !ok || idx < 0 || int(idx) >= len(t.Partitions) || t.Partitions[idx].Leader < 0 {
		return leaders
	}
	pi := t.Partitions[idx]
	cl.LeaderID, cl.LeaderEpoch = pi.Leader, pi.LeaderEpoch
	if leaders == nil {
		leaders = map[int32]bool{}
	}
	leaders[pi.Leader] = true
	return leaders
}

// leaderEndpoints lists the endpoints of the brokers named as current
// leaders (the response's node_endpoints, KIP-951), on the listener the
// client connected to, as Metadata does.
func (s *Server) leaderEndpoints(leaders map[int32]bool, listener string, out []kmsg.ProduceResponseBroker) []kmsg.ProduceResponseBroker {
	if len(leaders) == 0 {
		return out
	}
	for _, b := range s.ctrl.Brokers() {
		ep, ok := endpointFor(b, listener)
		if !leaders[b.NodeID] || !ok {
			continue
		}
		nb := kmsg.NewProduceResponseBroker()
		nb.NodeID, nb.Host, nb.Port = b.NodeID, ep.Host, ep.Port
		if b.Rack != "" {
			rack := b.Rack
			nb.Rack = &rack
		}
		out = append(out, nb)
	}
	return out
}

// missingPartitionCode is the error for a partition this broker does not
// host: KAFKA_STORAGE_ERROR if its replica here is in a failed log dir,
// NOT_LEADER_OR_FOLLOWER if it exists elsewhere, else
// UNKNOWN_TOPIC_OR_PARTITION.
func (s *Server) missingPartitionCode(topic string, idx int32) int16 {
	if t, ok := s.ctrl.Topic(topic); ok && idx >= 0 && int(idx) < len(t.Partitions) {
		if slices.Contains(t.Partitions[idx].Replicas, s.cfg.NodeID) && s.replicas.OfflineReplica(t.ID, idx) {
			// Its log dir failed: Kafka's answer for an offline replica.
			return kerr.KafkaStorageError.Code
		}
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.UnknownTopicOrPartition.Code
}

// produceTopicIDs names the topics of a Produce v13 request from their ids.
// The topics with unknown ids are removed from req and their answers
// returned (UNKNOWN_TOPIC_ID, or TRANSACTIONAL_ID_AUTHORIZATION_FAILED when
// the transactional id was refused, which Kafka checks first).
func (s *Server) produceTopicIDs(req *kmsg.ProduceRequest, txnDenied bool) []kmsg.ProduceResponseTopic {
	var unknown []kmsg.ProduceResponseTopic
	kept := req.Topics[:0]
	for _, rt := range req.Topics {
		if rt.TopicID != ([16]byte{}) {
			if t, ok := s.ctrl.TopicByID(rt.TopicID); ok {
				rt.Topic = t.Name
				kept = append(kept, rt)
				continue
			}
		}
		code := kerr.UnknownTopicID.Code
		if txnDenied {
			code = kerr.TransactionalIDAuthorizationFailed.Code
		}
		st := kmsg.NewProduceResponseTopic()
		st.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			st.Partitions = append(st.Partitions, sp)
		}
		unknown = append(unknown, st)
	}
	req.Topics = kept
	return unknown
}
