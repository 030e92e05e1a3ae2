package straittest_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/strait/strait/straittest"
)

// phaseLog records when each broker logged the lines that end the phases of
// its start: the embedded etcd ready (member started, leader elected), the
// controller ready (cluster id, metadata loaded, broker registered under its
// lease), the broker started (partition logs, coordinators, listeners).
type phaseLog struct {
	mu   sync.Mutex
	last map[string]time.Time // message -> latest time over the brokers
}

var phaseMessages = []string{"embedded etcd ready", "controller ready", "broker started"}

func (p *phaseLog) Enabled(context.Context, slog.Level) bool { return true }
func (p *phaseLog) WithAttrs([]slog.Attr) slog.Handler       { return p }
func (p *phaseLog) WithGroup(string) slog.Handler            { return p }
func (p *phaseLog) Handle(_ context.Context, r slog.Record) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Time.After(p.last[r.Message]) {
		p.last[r.Message] = r.Time
	}
	return nil
}

// benchmarkStart starts and closes a cluster of n per iteration and reports
// the phases: etcd-ms (start to the last embedded etcd ready), register-ms
// (to the last controller ready), broker-ms (to the last broker started),
// wait-ms (until StartCluster returns: the brokers agreeing on Metadata),
// start-ms (all of it) and close-ms (Close of the whole cluster).
func benchmarkStart(b *testing.B, n int, opts ...straittest.Option) {
	var sum [6]time.Duration
	for b.Loop() {
		p := &phaseLog{last: map[string]time.Time{}}
		t0 := time.Now()
		c := straittest.StartCluster(b, n, append([]straittest.Option{straittest.WithLogHandler(p),
			// b.Log prints even without -v: only errors.
			straittest.WithLogLevel(slog.LevelError)}, opts...)...)
		started := time.Now()
		c.Close()
		closed := time.Now()
		prev := t0
		for i, m := range phaseMessages {
			at := p.last[m]
			if at.IsZero() && i == 0 {
				at = t0 // no embedded etcd (the shared one)
			}
			if at.IsZero() {
				b.Fatalf("no %q logged", m)
			}
			sum[i] += at.Sub(prev)
			prev = at
		}
		sum[3] += started.Sub(prev)
		sum[4] += started.Sub(t0)
		sum[5] += closed.Sub(started)
		// Each broker's etcd preallocates its WAL: remove the directories
		// now rather than at the end of the benchmark.
		for _, br := range c.Brokers() {
			os.RemoveAll(filepath.Dir(br.Dir()))
		}
	}
	for i, name := range []string{"etcd-ms", "register-ms", "broker-ms", "wait-ms", "start-ms", "close-ms"} {
		b.ReportMetric(float64(sum[i].Microseconds())/1000/float64(b.N), name)
	}
}

func BenchmarkStart1(b *testing.B) { benchmarkStart(b, 1, straittest.WithEmbeddedEtcd()) }
func BenchmarkStart3(b *testing.B) { benchmarkStart(b, 3, straittest.WithEmbeddedEtcd()) }

// The same with the shared etcd (the default), kept up by another cluster
// (as when tests run in parallel): etcd-ms is then 0 (no embedded etcd).
func BenchmarkStart1SharedEtcd(b *testing.B) { benchmarkStartShared(b, 1) }
func BenchmarkStart3SharedEtcd(b *testing.B) { benchmarkStartShared(b, 3) }

func benchmarkStartShared(b *testing.B, n int) {
	straittest.Start(b, straittest.WithLogLevel(slog.LevelError))
	benchmarkStart(b, n)
}
