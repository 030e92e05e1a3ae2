package controller

import (
	"sort"
	"sync"
	"testing"
)

// TestProducerIDBlocksAreDisjoint: blocks follow each other from 0, and two
// brokers sharing one etcd allocating at the same time never get the same
// id; a restarted broker continues after the last block.
func TestProducerIDBlocksAreDisjoint(t *testing.T) {
	cfgA := withClientURL(testConfig(t, 1))
	a := startController(t, cfgA)
	first, last, err := a.AllocateProducerIDBlock(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if first != 0 || last != ProducerIDBlockSize-1 {
		t.Fatalf("first block [%d, %d], want [0, %d]", first, last, ProducerIDBlockSize-1)
	}

	cfgB := testConfig(t, 2)
	cfgB.DataDir = ""
	cfgB.EtcdEndpoints = []string{embeddedClientURL(a.etcd)}
	b := startController(t, cfgB)

	type block struct{ first, last int64 }
	var mu sync.Mutex
	blocks := []block{{first, last}}
	var wg sync.WaitGroup
	for _, c := range []*Controller{a, b, a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, l, err := c.AllocateProducerIDBlock(ctxT(t))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			blocks = append(blocks, block{f, l})
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(blocks, func(i, j int) bool { return blocks[i].first < blocks[j].first })
	for i, bl := range blocks {
		if want := int64(i) * ProducerIDBlockSize; bl.first != want || bl.last != want+ProducerIDBlockSize-1 {
			t.Fatalf("block %d is [%d, %d], want [%d, %d] (blocks %v)", i, bl.first, bl.last, want, want+ProducerIDBlockSize-1, blocks)
		}
	}

	// The counter lives in etcd: a restart continues after the last block.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a2 := startController(t, cfgA)
	f, _, err := a2.AllocateProducerIDBlock(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(blocks)) * ProducerIDBlockSize; f != want {
		t.Fatalf("after restart the block starts at %d, want %d", f, want)
	}
}

func TestDecodeProducerIDBlockEnd(t *testing.T) {
	end, err := decodeProducerIDBlockEnd([]byte(`{"version":1,"broker":3,"block_start":"1000","block_end":"1999"}`))
	if err != nil || end != 1999 {
		t.Fatalf("end %d, err %v", end, err)
	}
	for _, bad := range []string{`{`, `{"version":2,"block_end":"1"}`, `{"version":1,"block_end":1}`, `{"version":1,"block_end":"x"}`} {
		if _, err := decodeProducerIDBlockEnd([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
