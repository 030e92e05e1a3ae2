package broker_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConsumersOfManyPartitionsGetTheirOwnRecords: a fetch over many
// partitions takes its arrays from an earlier fetch's (fetchScratchPools,
// sessionPartitionPools). Two consumers of topics of 200 and 150
// partitions fetch concurrently while records keep coming, so their fetches
// park, wake and answer in turn; each reads exactly its own topic's
// records, every one once, in order within each partition.
func TestConsumersOfManyPartitionsGetTheirOwnRecords(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	admin := newClient(t, srv)
	topics := map[string]int32{"wide-a": 200, "wide-b": 150}
	for name, n := range topics {
		createTopic(t, admin, name, n, nil)
	}
	const rounds = 5

	var wg sync.WaitGroup
	errs := make(chan error, len(topics))
	for name, partitions := range topics {
		cl := newClient(t, srv, kgo.ConsumeTopics(name), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(100*time.Millisecond))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- consumeOwnRecords(cl, name, int(partitions), rounds)
		}()
	}

	producer := newClient(t, srv, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for round := range rounds {
		var recs []*kgo.Record
		for name, partitions := range topics {
			for p := range partitions {
				recs = append(recs, &kgo.Record{Topic: name, Partition: p, Value: []byte(fmt.Sprintf("%s/%d/%d", name, p, round))})
			}
		}
		produceAll(t, producer, recs)
		time.Sleep(50 * time.Millisecond) // the consumers catch up and park
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// consumeOwnRecords reads topic until it has rounds records of each of its
// partitions (within a minute) and checks each is its own and new.
func consumeOwnRecords(cl *kgo.Client, topic string, partitions, rounds int) error {
	next := make([]int, partitions) // the round expected next, by partition
	want, got := partitions*rounds, 0
	deadline := time.Now().Add(time.Minute)
	for got < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			fields := strings.Split(string(r.Value), "/")
			if bad != nil {
				return
			}
			if r.Topic != topic || len(fields) != 3 || fields[0] != topic || fields[1] != strconv.Itoa(int(r.Partition)) {
				bad = fmt.Errorf("consumer of %s read %q from %s-%d", topic, r.Value, r.Topic, r.Partition)
				return
			}
			if round, _ := strconv.Atoi(fields[2]); round != next[r.Partition] {
				bad = fmt.Errorf("%s-%d: read round %d, want %d", topic, r.Partition, round, next[r.Partition])
				return
			}
			next[r.Partition]++
			got++
		})
		if bad != nil {
			return bad
		}
	}
	if got != want {
		return fmt.Errorf("consumer of %s read %d records in a minute, want %d", topic, got, want)
	}
	return nil
}
