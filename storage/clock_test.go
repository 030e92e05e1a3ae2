package storage

import (
	"testing"
	"time"

	"github.com/strait/strait/internal/clock"
	"github.com/strait/strait/storage/compress"
)

// Retention by time and LogAppendTime read the log's clock (Options.Now),
// the wall clock as Kafka's time.milliseconds(): a clock jumped two hours
// forward expires a retention.ms=1h segment written just now, and batches
// stamped while the clock was three hours behind expire once it is back in
// step.
func TestRetentionFollowsJumpedClock(t *testing.T) {
	clk := clock.NewOffset()
	cfg := testConfig()
	cfg.RetentionMs = time.Hour.Milliseconds()
	cfg.TimestampType = LogAppendTime
	l, err := Open(t.TempDir(), cfg, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	info := mustAppend(t, l, simpleBatch(t, compress.None, 5, time.Now().UnixMilli()))
	if d := time.Since(time.UnixMilli(info.LogAppendTime)); d < -time.Minute || d > time.Minute {
		t.Fatalf("LogAppendTime %v from now with the clock in step", -d)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	if n, err := l.DeleteOldSegments(clk.Now()); n != 0 || err != nil {
		t.Fatalf("deleted %d segments (%v) of fresh data", n, err)
	}
	clk.Jump(2 * time.Hour)
	if n, err := l.DeleteOldSegments(clk.Now()); n != 1 || err != nil {
		t.Fatalf("after a 2h jump: deleted %d segments (%v), want 1", n, err)
	}
	if l.LogStartOffset() != 5 {
		t.Fatalf("log start %d after retention, want 5", l.LogStartOffset())
	}

	// Stamped on a clock three hours behind, then the clock steps back.
	clk.Set(-3 * time.Hour)
	info = mustAppend(t, l, simpleBatch(t, compress.None, 5, time.Now().UnixMilli()))
	if d := time.Since(time.UnixMilli(info.LogAppendTime)); d < 3*time.Hour-time.Minute || d > 3*time.Hour+time.Minute {
		t.Fatalf("LogAppendTime %v behind the system time, want 3h", d)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	if n, err := l.DeleteOldSegments(clk.Now()); n != 0 || err != nil {
		t.Fatalf("deleted %d segments (%v) while the clock is behind", n, err)
	}
	clk.Set(0)
	if n, err := l.DeleteOldSegments(clk.Now()); n != 1 || err != nil {
		t.Fatalf("clock back in step: deleted %d segments (%v), want 1", n, err)
	}
	if l.LogStartOffset() != 10 {
		t.Fatalf("log start %d, want 10", l.LogStartOffset())
	}
}
