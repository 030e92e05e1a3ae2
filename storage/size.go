package storage

// Size is the bytes of the log's segments: what was written to each (whole
// batches), not the length of its file, which preallocate extends to
// segment.bytes. Kafka's UnifiedLog.size.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segments {
		n += s.size
	}
	return n
}

// Config is the log's current configuration.
func (l *Log) Config() LogConfig { return *l.config() }
