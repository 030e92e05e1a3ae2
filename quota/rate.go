package quota

// rate is Kafka's Rate over a SampledStat of sums (org.apache.kafka.common.
// metrics.stats.Rate, SampledStat), with the same sample rotation, purge and
// window size, so that throttle times come out as Kafka's.

type sample struct {
	value   float64
	events  int64
	startMs int64
	lastMs  int64 // the last event's time
}

func (s *sample) reset(now int64) { *s = sample{startMs: now, lastMs: now} }

// windowConfig is quota.window.num samples of quota.window.size.seconds.
type windowConfig struct {
	samples  int
	windowMs int64
}

type rate struct {
	samples []sample // at most samples+1 (Kafka keeps one overlapping sample)
	current int
}

func (r *rate) cur(now int64) *sample {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{startMs: now, lastMs: now})
	}
	return &r.samples[r.current]
}

// record is SampledStat.record.
func (r *rate) record(cfg windowConfig, v float64, now int64) {
	s := r.cur(now)
	if now-s.startMs >= cfg.windowMs {
		r.current = (r.current + 1) % (cfg.samples + 1)
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, sample{startMs: now, lastMs: now})
		} else {
			r.samples[r.current].reset(now)
		}
		s = &r.samples[r.current]
	}
	s.value += v
	s.events++
	s.lastMs = now
}

// unrecord takes v back from the current sample (Kafka records a negative
// value: Fetch's unrecordQuotaSensor).
func (r *rate) unrecord(cfg windowConfig, v float64, now int64) { r.record(cfg, -v, now) }

func (r *rate) purge(cfg windowConfig, now int64) {
	expire := int64(cfg.samples) * cfg.windowMs
	for i := range r.samples {
		if now-r.samples[i].lastMs >= expire {
			r.samples[i].reset(now)
		}
	}
}

// windowMs is Rate.windowSize: the time since the oldest sample began,
// counted as at least samples-1 full windows, and at least 1 ms.
func (r *rate) windowMs(cfg windowConfig, now int64) int64 {
	r.purge(cfg, now)
	r.cur(now)
	oldest := r.samples[0].startMs
	for _, s := range r.samples[1:] {
		oldest = min(oldest, s.startMs)
	}
	total := now - oldest
	full := total / cfg.windowMs
	if minFull := int64(cfg.samples - 1); full < minFull {
		total += (minFull - full) * cfg.windowMs
	}
	return max(total, 1)
}

// measure is Rate.measure in units per second.
func (r *rate) measure(cfg windowConfig, now int64) float64 {
	r.purge(cfg, now)
	var sum float64
	for _, s := range r.samples {
		sum += s.value
	}
	return sum / (float64(r.windowMs(cfg, now)) / 1000)
}
