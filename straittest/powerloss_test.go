package straittest_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/straittest"
)

// The power-loss test of issue 17: three brokers, RF=3,
// min.insync.replicas=2, Kafka's default flush policy (no fsync per
// produce: log.flush.interval.messages unset), an idempotent acks=all
// producer writing sequenced values to a few partitions. At a seeded
// moment one broker (the leader of partition 0 or one of its followers)
// loses power: everything it had not fsynced is gone
// (straittest.PowerLoss, storage.StrictFS). It restarts and heals from its
// peers (leader epoch truncation, then fetching); some seeds then take
// down a second broker the same way. The checks:
//
//   - every acknowledged record is in the final log, each value once, in
//     the order produced, and nothing is there that was not produced;
//   - every record a consumer was served while this went on is in the
//     final log at the offset it was served at (nothing served was later
//     lost: it had been committed);
//   - the three replicas' log files hold the same batches, byte for byte,
//     below the high watermark.
//
// STRAIT_POWERLOSS_SEEDS sets how many seeds run (default 3, under a
// minute); make powerloss-long runs 200.
func TestPowerLoss(t *testing.T) {
	seeds := 3
	if s := os.Getenv("STRAIT_POWERLOSS_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("STRAIT_POWERLOSS_SEEDS=%q: want a count >= 1", s)
		}
		seeds = n
	}
	first := uint64(1)
	if s := os.Getenv("STRAIT_POWERLOSS_FIRST_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("STRAIT_POWERLOSS_FIRST_SEED=%q: %v", s, err)
		}
		first = n
	}
	var total powerLossStats
	start := time.Now()
	for seed := first; seed < first+uint64(seeds); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			st := runPowerLoss(t, seed)
			total.add(st)
		})
	}
	t.Logf("power loss: %d seeds, %d power losses (%d of a leader) dropping %d unsynced bytes, %d records acknowledged, %d lost, %d served to the concurrent consumer, %v",
		seeds, total.crashes, total.leaderCrashes, total.lostBytes, total.acked, total.lost, total.served, time.Since(start).Round(time.Second))
}

type powerLossStats struct {
	mu                     sync.Mutex
	crashes, leaderCrashes int
	acked, lost, served    int
	lostBytes              int64
}

func (s *powerLossStats) add(o *powerLossStats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.crashes += o.crashes
	s.leaderCrashes += o.leaderCrashes
	s.acked += o.acked
	s.lost += o.lost
	s.served += o.served
	s.lostBytes += o.lostBytes
}

const (
	plTopic      = "pl"
	plPartitions = 3
)

// plValue is the value of the seq'th record of a partition: sequences are
// per partition, from 0, in the order produced.
func plValue(p int32, seq int) []byte { return fmt.Appendf(nil, "p%d-%07d", p, seq) }

func plSeq(p int32, v []byte) (int, bool) {
	prefix := fmt.Sprintf("p%d-", p)
	if !bytes.HasPrefix(v, []byte(prefix)) {
		return 0, false
	}
	n, err := strconv.Atoi(string(v[len(prefix):]))
	return n, err == nil
}

func runPowerLoss(t *testing.T, seed uint64) *powerLossStats {
	rng := rand.New(rand.NewPCG(seed, 17))
	segmentMs := 300 + rng.IntN(1500) // rolls, hence fsyncs, at seeded times
	c := straittest.StartCluster(t, 3, straittest.WithPowerLossDisks(),
		straittest.WithTopics(straittest.Topic{Name: plTopic, Partitions: plPartitions, ReplicationFactor: 3,
			Configs: map[string]string{"min.insync.replicas": "2", "segment.ms": strconv.Itoa(segmentMs)}}),
		straittest.WithConfigs(map[string]string{
			// A follower that stopped fetching leaves the ISR after 1.5 s
			// rather than 30 s, so acks=all goes on with two replicas.
			"replica.lag.time.max.ms":   "1500",
			"replica.fetch.wait.max.ms": "100",
		}))
	for p := range int32(plPartitions) {
		c.WaitISR(plTopic, p, 3, 30*time.Second)
	}
	st := &powerLossStats{}

	// Producers: one goroutine per partition, batches of sequenced values.
	prod := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Duration(rng.IntN(5))*time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond))
	var (
		mu       sync.Mutex
		acked    [plPartitions][]bool // by sequence
		produced [plPartitions]int    // sequences handed to the producer
	)
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for p := range acked {
			for _, a := range acked[p] {
				if a {
					n++
				}
			}
		}
		return n
	}
	stopProducing := make(chan struct{})
	var wg sync.WaitGroup
	for p := range int32(plPartitions) {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sizes := rng2(seed, p)
			for range 100_000 {
				select {
				case <-stopProducing:
					return
				case <-ctx.Done():
					return
				default:
				}
				n := 1 + sizes.IntN(20)
				mu.Lock()
				from := produced[p]
				produced[p] += n
				acked[p] = append(acked[p], make([]bool, n)...)
				mu.Unlock()
				recs := make([]*kgo.Record, n)
				for i := range recs {
					recs[i] = &kgo.Record{Topic: plTopic, Partition: p, Value: plValue(p, from+i)}
				}
				pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
				res := prod.ProduceSync(pctx, recs...)
				pcancel()
				mu.Lock()
				for i, r := range res {
					if r.Err == nil {
						acked[p][from+i] = true
					}
				}
				mu.Unlock()
			}
		})
	}

	// A consumer reading all along: what it is served must stay.
	served := make(map[int32]map[int64]string)
	var servedTwice []string // offsets served with two values: one was never committed
	cons := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{plTopic: {
		0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond))
	consCtx, stopConsuming := context.WithCancel(context.Background())
	var consWG sync.WaitGroup
	consWG.Go(func() {
		for consCtx.Err() == nil {
			fs := cons.PollFetches(consCtx)
			fs.EachRecord(func(r *kgo.Record) {
				if served[r.Partition] == nil {
					served[r.Partition] = map[int64]string{}
				}
				if v, ok := served[r.Partition][r.Offset]; ok && v != string(r.Value) {
					servedTwice = append(servedTwice, fmt.Sprintf("partition %d offset %d: %q, then %q", r.Partition, r.Offset, v, r.Value))
				}
				served[r.Partition][r.Offset] = string(r.Value)
			})
		}
	})

	waitAcked := func(n int, what string) {
		t.Helper()
		deadline := time.Now().Add(45 * time.Second)
		for ackedCount() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: only %d records acknowledged, want %d", what, ackedCount(), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	rounds := 1
	if rng.IntN(3) == 0 {
		rounds = 2
	}
	for round := range rounds {
		waitAcked(ackedCount()+50+rng.IntN(500), "before the power loss")
		// A seeded pause, so the cut falls at various points of a roll,
		// a flush or a fetch.
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		leader := c.Leader(plTopic, 0)
		victim := leader
		if rng.IntN(2) == 0 {
			victim = otherThan(leader)[rng.IntN(2)]
		} else {
			st.leaderCrashes++
		}
		t.Logf("round %d: power loss of broker %d (partition 0's leader: %d), segment.ms %d", round, victim, leader, segmentMs)
		lost := c.PowerLoss(victim)
		st.crashes++
		t.Logf("round %d: broker %d lost the unsynced %d bytes of %d files, and %d directory entries holding %d bytes",
			round, victim, lost.Bytes, lost.Files, lost.Entries, lost.EntryBytes)
		// With records flowing, the active segments always hold writes
		// not fsynced yet: a power loss that drops nothing tests nothing.
		if lost.Bytes+lost.EntryBytes == 0 {
			t.Fatalf("the power loss of broker %d dropped nothing", victim)
		}
		st.lostBytes += lost.Bytes + lost.EntryBytes
		// The partitions were created before the first record: their
		// directories, and what was fsynced in them, must survive.
		for p := range int32(plPartitions) {
			dir := filepath.Join(c.Broker(victim).Dir(), "logs", fmt.Sprintf("%s-%d", plTopic, p))
			if _, err := os.Stat(filepath.Join(dir, "partition.metadata")); err != nil {
				t.Errorf("broker %d lost partition %d's directory in the power loss: %v", victim, p, err)
			}
		}
		// The two others go on: acks=all with min.insync.replicas=2.
		waitAcked(ackedCount()+50, "with a broker down")
		c.Restart(victim)
		for p := range int32(plPartitions) {
			c.WaitISR(plTopic, p, 3, 45*time.Second)
		}
	}
	waitAcked(ackedCount()+50, "after healing")
	close(stopProducing)
	wg.Wait()

	// The final log, read from the start up to the high watermark.
	ends, err := c.Admin().ListEndOffsets(context.Background(), plTopic)
	if err != nil {
		t.Fatal(err)
	}
	final := map[int32][]*kgo.Record{}
	total := 0
	for p := range int32(plPartitions) {
		o, ok := ends.Lookup(plTopic, p)
		if !ok || o.Err != nil {
			t.Fatalf("end offset of %d: %v", p, o.Err)
		}
		total += int(o.Offset)
	}
	got := consume(t, c.Client(kgo.ConsumeTopics(plTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), total)
	for _, r := range got {
		final[r.Partition] = append(final[r.Partition], r)
	}
	stopConsuming()
	consWG.Wait()

	for _, s := range servedTwice {
		t.Errorf("served twice with different values (the first was never committed): %s", s)
	}
	mu.Lock()
	defer mu.Unlock()
	for p := range int32(plPartitions) {
		recs := final[p]
		present := make([]bool, produced[p])
		last := -1
		for i, r := range recs {
			if r.Offset != int64(i) {
				t.Errorf("partition %d: record %d at offset %d (a gap: nothing here is compacted or aborted)", p, i, r.Offset)
			}
			seq, ok := plSeq(p, r.Value)
			if !ok || seq >= produced[p] {
				t.Errorf("partition %d offset %d: %q was never produced", p, r.Offset, r.Value)
				continue
			}
			if seq <= last {
				t.Errorf("partition %d offset %d: sequence %d after %d (duplicated or reordered)", p, r.Offset, seq, last)
			}
			last = max(last, seq)
			present[seq] = true
		}
		for seq, a := range acked[p] {
			if !a {
				continue
			}
			st.acked++
			if !present[seq] {
				st.lost++
				t.Errorf("partition %d: acknowledged %s lost", p, plValue(p, seq))
			}
		}
		for off, v := range served[p] {
			st.served++
			if off >= int64(len(recs)) || string(recs[off].Value) != v {
				t.Errorf("partition %d offset %d: %q was served, then lost (never committed)", p, off, v)
			}
		}
	}
	for p := range int32(plPartitions) {
		o, _ := ends.Lookup(plTopic, p)
		checkReplicasIdentical(t, c, p, o.Offset)
	}
	t.Logf("seed %d: %d acknowledged, %d lost, %d served concurrently", seed, st.acked, st.lost, st.served)
	return st
}

// rng2 is the seeded batch-size source of one producer goroutine (a
// rand.Rand is not safe for concurrent use).
func rng2(seed uint64, p int32) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(p)+1000))
}

// checkReplicasIdentical waits until every broker's log files of
// partition p hold batches up to hw, then compares them byte for byte
// below hw.
func checkReplicasIdentical(t *testing.T, c *straittest.Cluster, p int32, hw int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var logs [][]byte
		var errs []string
		for _, b := range c.Brokers() {
			data, end, err := batchesBelow(filepath.Join(b.Dir(), "logs", fmt.Sprintf("%s-%d", plTopic, p)), hw)
			switch {
			case err != nil:
				errs = append(errs, fmt.Sprintf("broker %d: %v", b.ID(), err))
			case end < hw:
				errs = append(errs, fmt.Sprintf("broker %d: batches up to %d of %d", b.ID(), end, hw))
			}
			logs = append(logs, data)
		}
		if len(errs) == 0 {
			for i := 1; i < len(logs); i++ {
				if !bytes.Equal(logs[0], logs[i]) {
					errs = append(errs, fmt.Sprintf("broker %d's %d bytes below offset %d differ from broker 1's %d at byte %d",
						i+1, len(logs[i]), hw, len(logs[0]), firstDiff(logs[0], logs[i])))
				}
			}
			if len(errs) == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition %d: replicas not identical below the high watermark %d: %s", p, hw, strings.Join(errs, "; "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// batchesBelow reads a partition directory's segments in offset order and
// returns the bytes of the whole batches below hw, and the offset after
// the last batch read.
func batchesBelow(dir string, hw int64) ([]byte, int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, err
	}
	var segs []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			segs = append(segs, e.Name())
		}
	}
	slices.Sort(segs) // 20-digit base offsets: lexical order is offset order
	var out []byte
	next := int64(-1)
	for _, name := range segs {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, 0, err
		}
		for pos := 0; pos+61 <= len(data); {
			base := int64(binary.BigEndian.Uint64(data[pos:]))
			size := 12 + int(binary.BigEndian.Uint32(data[pos+8:]))
			if size < 61 || pos+size > len(data) {
				break // a tail being written
			}
			lastDelta := int64(binary.BigEndian.Uint32(data[pos+23:]))
			if base >= hw {
				return out, hw, nil
			}
			if next >= 0 && base != next {
				return nil, 0, fmt.Errorf("%s: batch at %d after one ending at %d", name, base, next)
			}
			out = append(out, data[pos:pos+size]...)
			next = base + lastDelta + 1
			pos += size
		}
	}
	return out, max(next, 0), nil
}
