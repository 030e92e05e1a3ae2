package replication

import "time"

// maintenanceLoop runs the periodic per-partition work every
// MaintenanceInterval (a second): flush.ms, releasing idle active
// segments, ISR shrinking, and every log.retention.check.interval.ms and
// producer.id.expiration.check.interval.ms retention and producer-id
// expiry, for the partitions the schedule (schedule.go) names: those that
// changed since the last pass and those with a deadline due.
func (m *Manager) maintenanceLoop() {
	defer m.loops.Done()
	t := time.NewTicker(m.cfg.MaintenanceInterval)
	defer t.Stop()
	// The schedule runs on the monotonic clock, as Kafka's scheduler: a
	// jump of the broker's wall clock (m.now) back must not stall
	// retention until the clock catches up, nor one forward run it early.
	// The work itself reads the wall clock.
	start := time.Now()
	ps := &passState{
		retention: periodic{interval: m.cfg.RetentionCheckInterval, last: start},
		expiry:    periodic{interval: m.cfg.ProducerIDExpirationCheckInterval, last: start},
	}
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.maintenancePass(ps, time.Now(), m.now())
		}
	}
}

// activeSegmentIdle is how long a partition goes without an append before
// its active segment's descriptor comes under the segment file cache's
// sealed bound (strait.log.segment.open.files.max): an idle partition then
// holds none. Before, only the cache's total bound (from RLIMIT_NOFILE)
// closes it.
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
