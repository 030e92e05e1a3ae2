package group

import (
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share groups' records (types 9 to 15) written through AppendShare are
// handed to Config.ShareLoaded by the coordinator that loads the partition
// next, before the partition serves requests: the latest value of each
// key, deleted keys left out, next to the partition's other groups.
func TestShareRecordsHandedOverOnLoad(t *testing.T) {
	log := newMemLog(1)
	meta := newMemMeta(TopicMeta{Name: "t", ID: topicID(7), Partitions: 2})
	c := testCoordinator(t, log, meta)
	key := func(typ byte, group string) []byte { return append([]byte{0, typ, 0, byte(len(group))}, group...) }
	if err := c.AppendShare("sg", []ShareRecord{
		{Key: key(11, "sg"), Value: []byte{0, 0, 0, 0, 0, 1, 0}},
		{Key: key(12, "sg"), Value: []byte{0, 0, 0, 0, 0, 1, 0}},
	}); err != nil {
		t.Fatal(err)
	}
	if r := commit(c, 9, "cg", "", -1, "t", map[int32]int64{0: 5}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %+v", r)
	}
	if err := c.AppendShare("sg", []ShareRecord{
		{Key: key(11, "sg"), Value: []byte{0, 0, 0, 0, 0, 2, 0}},
		{Key: key(12, "sg")}, // a tombstone
	}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := c.AppendShare("sg", nil); err == nil {
		t.Fatal("AppendShare after Close succeeded")
	}

	var (
		mu        sync.Mutex
		got       []ShareRecord
		partition int32 = -1
	)
	c2 := testCoordinator(t, log, meta, func(cfg *Config) {
		cfg.ShareLoaded = func(p int32, recs []ShareRecord) {
			mu.Lock()
			defer mu.Unlock()
			partition, got = p, recs
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if partition != 0 || len(got) != 1 || !slices.Equal(got[0].Key, key(11, "sg")) ||
		!slices.Equal(got[0].Value, []byte{0, 0, 0, 0, 0, 2, 0}) {
		t.Fatalf("handed over on partition %d: %+v", partition, got)
	}
	if code := c2.Coordinates("sg"); code != 0 {
		t.Fatalf("Coordinates after the load: %d", code)
	}
	if o := fetchOffsets(t, c2, "cg")["t"][0]; o != 5 {
		t.Fatalf("the consumer group's offset after the load: %d", o)
	}
	c2.Close()
	if code := c2.Coordinates("sg"); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("Coordinates after Close: %d", code)
	}
}
