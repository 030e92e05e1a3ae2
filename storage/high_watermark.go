package storage

// The high watermark is checkpointed in the log directory's
// replication-offset-checkpoint when the log has Options.Checkpoints
// (dir_checkpoints.go writes it, periodically and on shutdown: nothing here
// writes a file). Without them, in the partition directory, in
// high-watermark-checkpoint ("0\n<offset>\n", as the other checkpoints in
// checkpoint.go): Flush writes it, Close too unless the file holds the
// value already, and CheckpointHighWatermark does periodically
// (Kafka's replica.high.watermark.checkpoint.interval.ms). Open starts the high
// watermark at the checkpoint, clamped to [log start, log end], or at the
// log end offset without one: a restarted follower must not expose records
// its leader never committed, and a restarted leader's high watermark only
// moves once the followers have caught up again.
//
// Lock order: hwMu, then mu. CheckpointHighWatermark holds only hwMu while
// it writes, so appends and reads never wait for its fsync.
const highWatermarkFile = "high-watermark-checkpoint"

// CheckpointHighWatermark writes the current high watermark to
// high-watermark-checkpoint, unless the file holds it already (an idle
// partition costs no write and no fsync). Errors unwrap to
// KAFKA_STORAGE_ERROR.
func (l *Log) CheckpointHighWatermark() error {
	l.hwMu.Lock()
	defer l.hwMu.Unlock()
	l.mu.RLock()
	closed := l.closed.Load()
	l.mu.RUnlock()
	if closed {
		return errLogClosed
	}
	if l.highWatermark.Load() == l.hwCheckpointed {
		return nil
	}
	// Close and Delete take hwMu first, so the directory stays in place
	// until this write is done.
	if err := l.writeHighWatermarkLocked(syncAll); err != nil {
		return storageErr("checkpoint high watermark", err)
	}
	return nil
}

// writeHighWatermarkLocked writes the checkpoint with the fsyncs of mode;
// hwMu must be held.
func (l *Log) writeHighWatermarkLocked(mode fileSync) error {
	hw := l.highWatermark.Load()
	if l.cp != nil {
		// The directory's replication-offset-checkpoint holds it; its
		// periodic write and the shutdown write read it from the log.
		l.hwCheckpointed = hw
		return nil
	}
	l.hwCheckpointed = -1
	if err := writeCheckpointSync(l.fs, l.dir, highWatermarkFile, hw, mode); err != nil {
		return err
	}
	l.hwCheckpointed = hw
	return nil
}

// loadHighWatermark is the high watermark Open starts with: the checkpoint
// clamped to [logStart, logEnd], or logEnd without a (valid) checkpoint.
func (l *Log) loadHighWatermark(logStart, logEnd int64) int64 {
	hw := logEnd
	if l.cp != nil {
		if off, ok := l.cp.loaded(l.tp, highWatermarkKind); ok {
			hw = min(off, logEnd)
			l.hwCheckpointed = off
		}
	} else if off, ok, err := readCheckpoint(l.fs, l.dir, highWatermarkFile); err != nil {
		l.logger.Warn("ignoring high watermark checkpoint", "dir", l.dir, "err", err)
	} else if ok {
		hw = min(off, logEnd)
		l.hwCheckpointed = off
	}
	return max(hw, logStart)
}
