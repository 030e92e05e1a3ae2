package broker

// The transaction coordinator's side of the broker: its configuration (mapped
// from config.Transactions), the __transaction_state
// topic (created on first use, compacted, internal), the adapter through
// which the coordinator appends to and replays that topic's partitions, and
// the writing of transaction markers to the partitions this broker leads.
//
// The coordinator starts with the broker (startTxnService, from Start) so
// that transactions found in progress are completed and open ones time out
// without waiting for a client, and stops when the broker closes.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/config"
	"github.com/strait/strait/controller"
	"github.com/strait/strait/coordinator/group"
	"github.com/strait/strait/coordinator/txn"
	"github.com/strait/strait/protocol"
	"github.com/strait/strait/storage"
)

// txnSettings is what the broker needs beyond the coordinator's Config.
type txnSettings struct {
	coord             txn.Config
	numPartitions     int32 // transaction.state.log.num.partitions (50)
	replicationFactor int16 // transaction.state.log.replication.factor (3, clamped to live brokers)
	minISR            int64 // transaction.state.log.min.isr (2)
	segmentBytes      int64 // transaction.state.log.segment.bytes (100 MiB)
	loadBufferBytes   int64 // transaction.state.log.load.buffer.size (5 MiB)
	verification      bool  // transaction.partition.verification.enable (true)
	offsetsPartitions int32 // offsets.topic.num.partitions (50), for AddOffsetsToTxn
}

// txnSettingsFrom maps the typed transaction settings (config.Transactions,
// and offsets.topic.num.partitions of config.Groups) onto the coordinator's
// Config and the broker's own.
func (s *Server) txnSettingsFrom(t config.Transactions, g config.Groups) txnSettings {
	cfg := txn.DefaultConfig()
	cfg.Logger = s.logger
	cfg.Now = s.clock.Now
	cfg.MaxTimeout = t.MaxTimeout
	cfg.TransactionalIDExpiration = t.TransactionalIDExpiration
	cfg.AbortTimedOutInterval = t.AbortTimedOutInterval
	cfg.RemoveExpiredInterval = t.RemoveExpiredInterval
	cfg.TransactionVersion = finalizedTransactionVersion()
	return txnSettings{
		coord:             cfg,
		numPartitions:     t.StateLogPartitions,
		replicationFactor: t.StateLogReplication,
		minISR:            int64(t.StateLogMinISR),
		segmentBytes:      t.StateLogSegmentBytes,
		loadBufferBytes:   t.StateLogLoadBufferSize,
		verification:      t.PartitionVerification,
		offsetsPartitions: g.OffsetsTopicPartitions,
	}
}

// txnService is the broker's transaction coordinator and the state around it.
type txnService struct {
	srv      *Server
	settings txnSettings
	coord    *txn.Coordinator
	ids      *producerIDPool
	createMu sync.Mutex // one creation of __transaction_state at a time
}

// txns returns the server's transaction service (nil before Start).
func (s *Server) txns() *txnService { return s.txnSvc }

// startTxnService starts the transaction coordinator and has it load the
// __transaction_state partitions this broker leads, now and whenever they
// change.
func (s *Server) startTxnService() {
	settings := s.txnSettingsFrom(s.cfg.Transactions, s.cfg.Groups)
	svc := &txnService{srv: s, settings: settings, ids: newProducerIDPool()}
	state := &txnStateTopic{internalTopicLog{srv: s, topic: txn.TopicName, loadBuffer: settings.loadBufferBytes}}
	svc.coord = txn.New(settings.coord, state, svc)
	s.txnSvc = svc
	s.ctrl.Listen(func(ch controller.TopicChange) {
		if ch.Topic.Name == txn.TopicName {
			svc.coord.LoadOwned()
		}
	})
}

// ensureTopic creates __transaction_state if it does not exist yet, as
// Kafka does on the first FindCoordinator for a transactional id:
// compacted, uncompressed, internal, transaction.state.log.num.partitions
// partitions, transaction.state.log.replication.factor replicas (at most
// the live brokers).
func (t *txnService) ensureTopic() (controller.TopicInfo, error) {
	return t.srv.ensureInternalTopic(&t.createMu, txn.TopicName, t.settings.replicationFactor, func(rf int16) controller.CreateTopicRequest {
		return controller.CreateTopicRequest{
			NumPartitions: t.settings.numPartitions,
			Configs: map[string]string{
				"cleanup.policy":      "compact",
				"compression.type":    "uncompressed",
				"segment.bytes":       strconv.FormatInt(t.settings.segmentBytes, 10),
				"min.insync.replicas": strconv.FormatInt(min(t.settings.minISR, int64(rf)), 10),
			},
		}
	}, t.coord.LoadOwned)
}

// NewProducerID implements txn.Broker from this service's block of ids.
func (t *txnService) NewProducerID(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, producerIDAllocTimeout)
	defer cancel()
	return t.ids.nextID(ctx, t.srv.ctrl.AllocateProducerIDBlock)
}

// OffsetsPartition implements txn.Broker: the group's __consumer_offsets
// partition, by the topic's partition count (offsets.topic.num.partitions
// until it exists).
func (t *txnService) OffsetsPartition(groupID string) (txn.TopicPartition, error) {
	n := t.settings.offsetsPartitions
	if ti, ok := t.srv.ctrl.Topic(group.TopicName); ok {
		n = int32(len(ti.Partitions))
	}
	return txn.TopicPartition{Topic: group.TopicName, Partition: group.PartitionFor(groupID, n)}, nil
}

// WriteMarker implements txn.Broker: the marker goes to the partition's log
// if this broker leads it, else to its leader as a WriteTxnMarkers request.
func (t *txnService) WriteMarker(tp txn.TopicPartition, m txn.Marker) error {
	marker := storage.TxnMarker{
		ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch,
	}
	s := t.srv
	var err error
	if ti, ok := s.ctrl.Topic(tp.Topic); ok && tp.Partition >= 0 && int(tp.Partition) < len(ti.Partitions) &&
		ti.Partitions[tp.Partition].Leader >= 0 && ti.Partitions[tp.Partition].Leader != s.cfg.NodeID {
		err = s.sendTxnMarker(ti.Partitions[tp.Partition].Leader, tp.Topic, tp.Partition, marker)
	} else {
		err = s.writeTxnMarker(tp.Topic, tp.Partition, marker, 0)
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return txn.ErrPartitionGone
	}
	return err
}

// writeTxnMarker appends a transaction marker to a partition this broker
// leads (the leader's side of WriteTxnMarkers) and makes it visible: the
// high watermark moves, parked fetches wake (a read_committed fetch may
// now read further). Markers on __consumer_offsets also settle the
// transactional offset commits of the producer (see txnOffsetsCompleted).
// transactionVersion is WriteTxnMarkers v2's (KIP-1228; 0 below v2 and from
// this broker's own coordinator, whose markers keep the v1 epoch check).
func (s *Server) writeTxnMarker(topic string, idx int32, m storage.TxnMarker, transactionVersion int8) error {
	t, ok := s.ctrl.Topic(topic)
	if !ok || idx < 0 || int(idx) >= len(t.Partitions) {
		return fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, topic, idx)
	}
	p := s.replicas.Partition(topic, idx)
	if p == nil || !p.IsLeader() {
		return fmt.Errorf("%w: %s-%d", kerr.NotLeaderForPartition, topic, idx)
	}
	info, err := p.Log().AppendMarkerVersion(m, p.LeaderEpoch(), transactionVersion)
	if err != nil {
		return err
	}
	p.Appended()
	if topic == group.TopicName {
		s.txnOffsetsCompleted(idx, m.ProducerID, m.Commit)
	}
	// Markers are written with acks=all, as Kafka's coordinator sends them.
	return p.WaitReplicated(info.LastOffset+1, internalAppendTimeout, s.closing)
}

// txnStateTopic implements txn.StateLog over the broker's partitions.
type txnStateTopic struct{ internalTopicLog }

func (o *txnStateTopic) LeaderEpoch(p int32) (int32, bool) {
	part, err := o.partition(p)
	if err != nil {
		return 0, false
	}
	return part.LeaderEpoch(), true
}

// finalizedTransactionVersion is the transaction.version level ApiVersions
// advertises as finalized (protocol.Kafka44Features): clients follow it, so
// the coordinator serves that version.
func finalizedTransactionVersion() int16 {
	for _, f := range protocol.Kafka44Features(0).Finalized {
		if f.Name == "transaction.version" {
			return f.Level
		}
	}
	return 0
}
