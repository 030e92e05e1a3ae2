package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/internal/background"
	"github.com/strait/strait/recordbatch"
)

// TopicName is Kafka's name for the transaction state topic.
const TopicName = recordbatch.TransactionStateTopic

// Config holds the broker settings the coordinator uses, under Kafka's names.
type Config struct {
	MaxTimeout                time.Duration // transaction.max.timeout.ms (15 min)
	TransactionalIDExpiration time.Duration // transactional.id.expiration.ms (7 days)
	// AbortTimedOutInterval is transaction.abort.timed.out.transaction.
	// cleanup.interval.ms (10 s): how often open transactions past their
	// timeout are looked for and aborted.
	AbortTimedOutInterval time.Duration
	// RemoveExpiredInterval is transaction.remove.expired.transaction.
	// cleanup.interval.ms (1 h): how often idle transactional ids expire.
	RemoveExpiredInterval time.Duration
	// TransactionVersion is the cluster's finalized transaction.version: the
	// version of aborts the coordinator starts itself (timeouts, fencing)
	// and of the values it writes (2: value version 1).
	TransactionVersion int16
	// MarkerRetryBackoff is the pause before writing a marker again after a
	// retriable failure (Kafka retries on its inter-broker channel).
	MarkerRetryBackoff time.Duration

	Logger *slog.Logger
	Now    func() time.Time // nil: time.Now
}

// DefaultConfig returns Kafka 4's defaults.
func DefaultConfig() Config {
	return Config{
		MaxTimeout:                15 * time.Minute,
		TransactionalIDExpiration: 7 * 24 * time.Hour,
		AbortTimedOutInterval:     10 * time.Second,
		RemoveExpiredInterval:     time.Hour,
		TransactionVersion:        TV2,
		MarkerRetryBackoff:        100 * time.Millisecond,
	}
}

// StateLog is __transaction_state as the coordinator sees it; the broker
// implements it over its partition logs.
type StateLog interface {
	// Partitions is the topic's partition count, 0 while it does not exist.
	Partitions() int32
	// LeaderEpoch returns the partition's leader epoch if this broker leads
	// it: the coordinator epoch of the transactional ids it holds.
	LeaderEpoch(partition int32) (int32, bool)
	// Append appends one record batch as the partition's leader and returns
	// once it is durable as configured; errors unwrap to a *kerr.Error when
	// Kafka has a code for them.
	Append(partition int32, batch []byte) error
	// ReadFrom calls fn with every record batch from offset (clamped to the
	// log start) to the log end, in order.
	ReadFrom(partition int32, offset int64, fn func(batch []byte) error) error
}

// Marker is a commit or abort marker for one producer.
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
}

// Broker is what else the coordinator needs from the broker.
type Broker interface {
	// NewProducerID returns a producer id never handed out before.
	NewProducerID(ctx context.Context) (int64, error)
	// WriteMarker writes a marker to a partition's leader (Kafka sends
	// WriteTxnMarkers). It returns nil, ErrPartitionGone when the
	// partition no longer exists (its marker is skipped, as Kafka skips
	// partitions without a leader endpoint), or an error unwrapping to the
	// *kerr.Error the leader answered.
	WriteMarker(tp TopicPartition, m Marker) error
	// OffsetsPartition is the __consumer_offsets partition of a group, the
	// one AddOffsetsToTxn adds to a transaction.
	OffsetsPartition(group string) (TopicPartition, error)
}

// ErrPartitionGone reports a marker for a partition that was deleted.
var ErrPartitionGone = errors.New("partition no longer exists")

// Coordinator is the transaction coordinator of one broker: it owns the
// transactional ids of the __transaction_state partitions the broker leads.
type Coordinator struct {
	cfg    Config
	log    StateLog
	broker Broker
	logger *slog.Logger
	now    func() time.Time

	// shards are the loaded (or loading) partitions, by partition; the map
	// is replaced whole under shardsMu (taken only when partitions move),
	// read without a lock.
	shards   atomic.Pointer[map[int32]*shard]
	shardsMu sync.Mutex

	closed atomic.Bool
	stop   chan struct{}
	bg     background.Group // the goroutines Close waits for (bg.Go)
}

// shard is one __transaction_state partition's transactional ids.
type shard struct {
	partition int32
	epoch     int32 // the coordinator epoch: the partition's leader epoch
	loading   atomic.Bool
	unloaded  atomic.Bool

	mu   sync.Mutex // guards txns
	txns map[string]*txnMetadata
}

func (sh *shard) get(id string) *txnMetadata {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.txns[id]
}

// putIfAbsent adds m unless the id exists, returning what is there.
func (sh *shard) putIfAbsent(m *txnMetadata) *txnMetadata {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if cur := sh.txns[m.id]; cur != nil {
		return cur
	}
	sh.txns[m.id] = m
	return m
}

func (sh *shard) all() []*txnMetadata {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	out := make([]*txnMetadata, 0, len(sh.txns))
	for _, m := range sh.txns {
		out = append(out, m)
	}
	return out
}

// New returns a coordinator over the state log and the broker and starts
// its background work (aborting timed-out transactions, expiring idle
// transactional ids). Call LoadOwned to load the partitions led here.
func New(cfg Config, log StateLog, broker Broker) *Coordinator {
	def := DefaultConfig()
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = def.MaxTimeout
	}
	if cfg.TransactionalIDExpiration <= 0 {
		cfg.TransactionalIDExpiration = def.TransactionalIDExpiration
	}
	if cfg.AbortTimedOutInterval <= 0 {
		cfg.AbortTimedOutInterval = def.AbortTimedOutInterval
	}
	if cfg.RemoveExpiredInterval <= 0 {
		cfg.RemoveExpiredInterval = def.RemoveExpiredInterval
	}
	if cfg.MarkerRetryBackoff <= 0 {
		cfg.MarkerRetryBackoff = def.MarkerRetryBackoff
	}
	c := &Coordinator{cfg: cfg, log: log, broker: broker, logger: cfg.Logger, now: cfg.Now, stop: make(chan struct{})}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	c.logger = c.logger.With("component", "txn-coordinator")
	if c.now == nil {
		c.now = time.Now
	}
	c.shards.Store(&map[int32]*shard{})
	c.bg.Go(func() { c.every(cfg.AbortTimedOutInterval, c.abortTimedOutTransactions) })
	c.bg.Go(func() { c.every(cfg.RemoveExpiredInterval, c.removeExpiredTransactionalIDs) })
	return c
}

func (c *Coordinator) every(d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			fn()
		}
	}
}

// Close stops the background work and marker writing and unloads
// everything; requests after it get NOT_COORDINATOR.
func (c *Coordinator) Close() {
	// Refused from here on, so everything started began before closed was
	// set and is waited for below.
	c.bg.Close()
	if c.closed.Swap(true) {
		return
	}
	close(c.stop)
	c.shardsMu.Lock()
	for _, sh := range *c.shards.Load() {
		sh.unloaded.Store(true)
	}
	c.shards.Store(&map[int32]*shard{})
	c.shardsMu.Unlock()
	c.bg.Wait()
}

// PartitionFor is the __transaction_state partition of a transactional id
// with the topic's current partition count.
func (c *Coordinator) PartitionFor(transactionalID string) int32 {
	return PartitionFor(transactionalID, c.log.Partitions())
}

// LoadOwned loads the partitions this broker leads that are not loaded (or
// whose leader epoch changed) and unloads those it no longer leads. The
// broker calls it when __transaction_state appears or its leaders change.
func (c *Coordinator) LoadOwned() {
	if c.closed.Load() {
		return
	}
	c.shardsMu.Lock()
	defer c.shardsMu.Unlock()
	old := *c.shards.Load()
	next := make(map[int32]*shard, len(old))
	var toLoad []*shard
	n := c.log.Partitions()
	for p := int32(0); p < n; p++ {
		epoch, leads := c.log.LeaderEpoch(p)
		cur := old[p]
		switch {
		case !leads:
			continue
		case cur != nil && cur.epoch == epoch:
			next[p] = cur
		default:
			sh := &shard{partition: p, epoch: epoch, txns: map[string]*txnMetadata{}}
			sh.loading.Store(true)
			next[p] = sh
			toLoad = append(toLoad, sh)
		}
	}
	for p, sh := range old {
		if next[p] != sh {
			sh.unloaded.Store(true)
			c.logger.Info("unloaded transaction state partition", "partition", p, "coordinator_epoch", sh.epoch)
		}
	}
	c.shards.Store(&next)
	for _, sh := range toLoad {
		c.bg.Go(func() { c.load(sh) })
	}
}

// load reads a partition's transactional ids (Kafka's
// loadTransactionsForTxnTopicPartition) and completes the transactions
// that were being committed or aborted.
func (c *Coordinator) load(sh *shard) {
	start := time.Now()
	loaded := map[string]*txnMetadata{}
	err := c.log.ReadFrom(sh.partition, 0, func(batch []byte) error {
		if sh.unloaded.Load() {
			return errUnloaded
		}
		return readRecords(batch, func(key, value []byte) error {
			id, ok, err := decodeKey(key)
			if err != nil || !ok {
				if err != nil {
					c.logger.Warn("skipping an unreadable transaction state key", "partition", sh.partition, "err", err)
				}
				return nil
			}
			if value == nil {
				delete(loaded, id)
				return nil
			}
			m, err := decodeValue(id, value)
			if err != nil {
				c.logger.Warn("skipping an unreadable transaction state value", "partition", sh.partition, "transactional_id", id, "err", err)
				return nil
			}
			loaded[id] = m
			return nil
		})
	})
	if errors.Is(err, errUnloaded) {
		return
	}
	if err != nil {
		c.logger.Error("loading transaction state failed", "partition", sh.partition, "err", err)
	}
	type pending struct {
		m      *txnMetadata
		t      transit
		commit bool
	}
	var complete []pending
	nowMs := c.now().UnixMilli()
	sh.mu.Lock()
	for id, m := range loaded {
		sh.txns[id] = m
		if m.state == PrepareCommit || m.state == PrepareAbort {
			t, err := m.prepareComplete(nowMs)
			if err != nil {
				c.logger.Error("cannot complete a loaded transaction", "transactional_id", id, "err", err)
				continue
			}
			complete = append(complete, pending{m: m, t: t, commit: m.state == PrepareCommit})
		}
	}
	sh.mu.Unlock()
	sh.loading.Store(false)
	level := slog.LevelDebug
	if len(loaded) > 0 {
		level = slog.LevelInfo
	}
	c.logger.Log(context.Background(), level, "loaded transaction state partition", "partition", sh.partition,
		"coordinator_epoch", sh.epoch, "transactional_ids", len(loaded), "took", time.Since(start))
	for _, p := range complete {
		c.logger.Info("sending the markers of a transaction found in progress", "transactional_id", p.m.id,
			"partition", sh.partition, "commit", p.commit)
		c.startMarkers(sh, p.m, p.commit, p.t)
	}
}

var errUnloaded = errors.New("partition unloaded")

// shardOf returns the loaded shard owning a transactional id, or the error
// code Kafka answers: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) shardOf(id string) (*shard, int16) {
	if c.closed.Load() {
		return nil, kerr.NotCoordinator.Code
	}
	n := c.log.Partitions()
	if n == 0 {
		return nil, kerr.NotCoordinator.Code
	}
	sh := (*c.shards.Load())[PartitionFor(id, n)]
	switch {
	case sh == nil:
		return nil, kerr.NotCoordinator.Code
	case sh.loading.Load():
		return nil, kerr.CoordinatorLoadInProgress.Code
	}
	return sh, 0
}

// owns reports whether sh is still the loaded shard of its partition.
func (c *Coordinator) owns(sh *shard) bool {
	return !sh.unloaded.Load() && (*c.shards.Load())[sh.partition] == sh
}

// write appends a prepared transition to __transaction_state and applies
// it (Kafka's appendTransactionToLog); the caller holds no lock. It returns
// 0 or the error code for the client. With keepPending, a failure with
// COORDINATOR_NOT_AVAILABLE leaves the transition pending for a retry.
func (c *Coordinator) write(sh *shard, m *txnMetadata, t transit, keepPendingOnUnavailable bool) int16 {
	if !c.owns(sh) {
		// The partition moved (or the coordinator closed): its next owner
		// holds the state now, and this write must not reach its log.
		return kerr.NotCoordinator.Code
	}
	batch := buildBatch(encodeKey(m.id), encodeValue(t, c.cfg.TransactionVersion), c.now())
	code := int16(0)
	if err := c.log.Append(sh.partition, batch); err != nil {
		code = appendErrorCode(err)
		c.logger.Debug("appending transaction state failed", "transactional_id", m.id, "state", t.state, "err", err)
	}
	m.lock()
	defer m.unlock()
	switch {
	case code == 0 && !c.owns(sh):
		code = kerr.NotCoordinator.Code
	case code == 0:
		m.complete(t)
	case c.owns(sh) && !(keepPendingOnUnavailable && code == kerr.CoordinatorNotAvailable.Code):
		m.pending = noState
	}
	return code
}

// appendErrorCode maps a failed append to the code a coordinator answers,
// as Kafka's appendTransactionToLog.
func appendErrorCode(err error) int16 {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.UnknownServerError.Code
	}
	switch ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge, kerr.RecordListTooLarge:
		return kerr.UnknownServerError.Code
	}
	return ke.Code
}

// illegal logs a transition the state machine refused (a bug) and answers
// UNKNOWN_SERVER_ERROR, where Kafka would throw.
func (c *Coordinator) illegal(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	c.logger.Error("illegal transaction state transition", "err", err)
	return kerr.UnknownServerError.Code
}

var errProducerFenced = fmt.Errorf("%w", kerr.ProducerFenced)

// logFenced records a request refused PRODUCER_FENCED, with the epoch it
// carried and the current one: to a client running transaction version 2 a
// fenced producer is fatal, so which side moved on is worth a line. Under
// m's lock.
func (c *Coordinator) logFenced(op string, m *txnMetadata, producerID int64, epoch int16) {
	c.logger.Info("producer fenced", "request", op, "transactional_id", m.id, "producer_id", producerID,
		"producer_epoch", epoch, "current_producer_id", m.producerID, "current_producer_epoch", m.producerEpoch,
		"state", m.state, "pending", m.pending)
}

// ValidTimeout reports whether a transaction timeout is within
// (0, transaction.max.timeout.ms].
func (c *Coordinator) ValidTimeout(ms int32) bool {
	return ms > 0 && time.Duration(ms)*time.Millisecond <= c.cfg.MaxTimeout
}
