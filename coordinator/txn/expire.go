package txn

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// loadedShards lists the shards that are loaded (not loading).
func (c *Coordinator) loadedShards() []*shard {
	var out []*shard
	for _, sh := range *c.shards.Load() {
		if !sh.loading.Load() {
			out = append(out, sh)
		}
	}
	return out
}

// abortTimedOutTransactions aborts every open transaction older than its
// timeout (Kafka's abortTimedOutTransactions, run every
// transaction.abort.timed.out.transaction.cleanup.interval.ms): the
// producer's epoch is fenced, so its late writes are refused.
func (c *Coordinator) abortTimedOutTransactions() {
	nowMs := c.now().UnixMilli()
	for _, sh := range c.loadedShards() {
		for _, m := range sh.all() {
			m.lock()
			if m.pending != noState || m.state != Ongoing || m.startMs+int64(m.timeoutMs) >= nowMs {
				m.unlock()
				continue
			}
			t, err := m.prepareFenceProducerEpoch()
			m.unlock()
			if err != nil {
				c.illegal(err)
				continue
			}
			c.logger.Info("aborting a transaction past its timeout", "transactional_id", m.id,
				"producer_id", t.producerID, "timeout_ms", t.timeoutMs)
			code, _, _ := c.endTransaction(m.id, t.producerID, t.producerEpoch, false, false, c.cfg.TransactionVersion)
			switch code {
			case 0, kerr.InvalidProducerIDMapping.Code, kerr.ProducerFenced.Code, kerr.ConcurrentTransactions.Code:
			default:
				c.logger.Warn("aborting a timed out transaction failed", "transactional_id", m.id, "err", kerr.ErrorForCode(code))
			}
		}
	}
}

// removeExpiredTransactionalIDs forgets transactional ids idle for
// transactional.id.expiration.ms with no transaction open (Kafka's
// removeExpiredTransactionalIds): a tombstone goes to __transaction_state,
// then the id leaves the cache.
func (c *Coordinator) removeExpiredTransactionalIDs() {
	nowMs := c.now().UnixMilli()
	expiration := c.cfg.TransactionalIDExpiration.Milliseconds()
	for _, sh := range c.loadedShards() {
		for _, m := range sh.all() {
			m.lock()
			if m.pending != noState || !m.state.expirationAllowed() || m.lastUpdateMs > nowMs-expiration {
				m.unlock()
				continue
			}
			t, err := m.prepareDead()
			m.unlock()
			if err != nil {
				c.illegal(err)
				continue
			}
			err = c.log.Append(sh.partition, buildBatch(encodeKey(m.id), nil, c.now()))
			m.lock()
			if err == nil && c.owns(sh) && m.pending == Dead && m.producerEpoch == t.producerEpoch {
				m.unlock()
				sh.mu.Lock()
				if sh.txns[m.id] == m {
					delete(sh.txns, m.id)
				}
				sh.mu.Unlock()
				c.logger.Info("expired transactional id", "transactional_id", m.id)
				continue
			}
			m.pending = noState
			m.unlock()
			if err != nil {
				c.logger.Warn("cannot write the tombstone of an expired transactional id", "transactional_id", m.id, "err", err)
			}
		}
	}
}
