package txn

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Writing the markers of a transaction being committed or aborted, as
// Kafka's TransactionMarkerChannelManager with its completion handler: one
// marker per partition of the transaction, at the producer's epoch after
// the prepare step (bumped with transaction version 2) and the coordinator
// epoch; a partition is dropped from the transaction once its marker is
// written, skipped if the partition was deleted, retried after
// MarkerRetryBackoff on a retriable error; once none is left, the
// transaction moves to CompleteCommit or CompleteAbort (retried while
// __transaction_state is unavailable). Leaving the partition's leadership
// stops the work: the next leader's load finishes it.

// startMarkers writes the markers in the background, then complete.
func (c *Coordinator) startMarkers(sh *shard, m *txnMetadata, commit bool, complete transit) {
	m.lock()
	mk := Marker{ProducerID: m.producerID, ProducerEpoch: m.producerEpoch, CoordinatorEpoch: sh.epoch, Commit: commit}
	parts := m.sortedPartitions()
	m.unlock()
	// Refused once closed: the partition's next leader finishes the
	// transaction when it loads it.
	c.bg.Go(func() { c.sendMarkers(sh, m, mk, parts, complete) })
}

// markerOutcome is what a marker write's result means for the transaction.
type markerOutcome int

const (
	markerDone    markerOutcome = iota // written, or nothing to write
	markerRetry                        // try again later
	markerAbandon                      // the producer or coordinator moved on: stop
)

func (c *Coordinator) classifyMarkerError(tp TopicPartition, err error) markerOutcome {
	if err == nil {
		return markerDone
	}
	if errors.Is(err, ErrPartitionGone) {
		c.logger.Info("skipping the transaction marker of a deleted partition", "partition", tp.String())
		return markerDone
	}
	var ke *kerr.Error
	errors.As(err, &ke)
	switch ke {
	case kerr.InvalidProducerEpoch, kerr.TransactionCoordinatorFenced:
		c.logger.Info("transaction marker refused: the producer or coordinator epoch moved on", "partition", tp.String(), "err", err)
		return markerAbandon
	case kerr.UnsupportedForMessageFormat, kerr.UnsupportedVersion:
		c.logger.Warn("skipping a transaction marker the partition cannot take", "partition", tp.String(), "err", err)
		return markerDone
	case kerr.CorruptMessage, kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRequiredAcks:
		c.logger.Error("writing a transaction marker failed unexpectedly; retrying", "partition", tp.String(), "err", err)
	}
	return markerRetry
}

func (c *Coordinator) sendMarkers(sh *shard, m *txnMetadata, mk Marker, parts []TopicPartition, complete transit) {
	for len(parts) > 0 {
		if !c.owns(sh) {
			return
		}
		var retry []TopicPartition
		for _, tp := range parts {
			switch c.classifyMarkerError(tp, c.broker.WriteMarker(tp, mk)) {
			case markerDone:
				m.lock()
				if m.state == PrepareCommit || m.state == PrepareAbort {
					delete(m.partitions, tp)
				}
				m.unlock()
			case markerRetry:
				retry = append(retry, tp)
			case markerAbandon:
				return
			}
		}
		parts = retry
		if len(parts) > 0 && !c.sleep(c.cfg.MarkerRetryBackoff) {
			return
		}
	}
	for {
		code := c.write(sh, m, complete, true)
		switch code {
		case 0:
			c.logger.Debug("completed transaction", "transactional_id", m.id, "state", complete.state)
			return
		case kerr.CoordinatorNotAvailable.Code:
			if !c.sleep(c.cfg.MarkerRetryBackoff) {
				return
			}
		default:
			c.logger.Warn("cannot complete transaction", "transactional_id", m.id, "state", complete.state,
				"err", kerr.ErrorForCode(code))
			return
		}
	}
}

// sleep waits d unless the coordinator closes first (false).
func (c *Coordinator) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.stop:
		return false
	}
}
