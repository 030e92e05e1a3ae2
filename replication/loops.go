package replication

import "time"

// maintenanceLoop runs the periodic per-partition work: flush.ms,
// retention, producer-id expiry and ISR shrinking, every
// MaintenanceInterval (a second).
func (m *Manager) maintenanceLoop() {
	defer m.loops.Done()
	t := time.NewTicker(m.cfg.MaintenanceInterval)
	defer t.Stop()
	// The schedule runs on the monotonic clock, as Kafka's scheduler: a
	// jump of the broker's wall clock (m.now) back must not stall
	// retention until the clock catches up, nor one forward run it early.
	// The work itself reads the wall clock.
	start := time.Now()
	retention := periodic{interval: m.cfg.RetentionCheckInterval, last: start}
	expiry := periodic{interval: m.cfg.ProducerIDExpirationCheckInterval, last: start}
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			mono, now := time.Now(), m.now()
			checkRetention, expire := retention.due(mono), expiry.due(mono)
			m.ForEach(func(p *Partition) {
				// Shutdown need not wait for the rest of a pass: closing
				// a log flushes it.
				if m.stopping() {
					return
				}
				m.maintain(p, now, checkRetention, expire)
				p.maybeShrinkISR(now)
			})
		}
	}
}

// activeSegmentIdle is how long a partition goes without an append before
// its active segment's descriptor may be closed by the segment file cache
// (strait.log.segment.open.files.max): an idle partition then holds none.
const activeSegmentIdle = time.Minute

// periodic is a task run every interval by the maintenance loop.
type periodic struct {
	interval time.Duration
	last     time.Time
}

// due reports whether the task should run at now, and notes that it did.
func (t *periodic) due(now time.Time) bool {
	if now.Sub(t.last) < t.interval {
		return false
	}
	t.last = now
	return true
}

// maintain runs the time-based work of one partition: flush.ms, retention
// every log.retention.check.interval.ms, producer-state expiry every
// producer.id.expiration.check.interval.ms.
func (m *Manager) maintain(p *Partition, now time.Time, checkRetention, expireProducers bool) {
	if err := p.log.MaybeFlush(now); err != nil {
		m.logger.Error("flushing log", "topic", p.topic, "partition", p.index, "err", err)
	}
	p.log.ReleaseIdleActive(now, activeSegmentIdle)
	if expireProducers {
		p.log.ExpireProducers(now)
	}
	if !checkRetention {
		return
	}
	if n, err := p.log.DeleteOldSegments(now); err != nil {
		m.logger.Error("retention", "topic", p.topic, "partition", p.index, "err", err)
	} else if n > 0 {
		m.logger.Info("deleted segments by retention", "topic", p.topic, "partition", p.index,
			"segments", n, "log_start_offset", p.log.LogStartOffset())
	}
}
