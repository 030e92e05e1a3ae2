package storage

import (
	"math/rand/v2"
	"testing"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// TestTailBatchesAgreeWithHeaders: the active segment's remembered batch
// starts answer every offset as walking the headers does, through appends
// of batches of varying sizes, truncations (the log's own and one the
// entries have not seen an append after) and a roll; and the remembered
// entries do answer offsets at the log end.
func TestTailBatchesAgreeWithHeaders(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 20
	l := openTestLog(t, t.TempDir(), cfg, &testClock{testEpoch})
	defer l.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	// appendSized appends k batches of n records of size bytes, random
	// when 0.
	appendSized := func(k, n, size int) {
		t.Helper()
		for range k {
			n := n
			if n == 0 {
				n = 1 + rng.IntN(5)
			}
			spec := batchSpec{codec: compress.None, baseTimestamp: testEpoch.UnixMilli()}
			for i := range n {
				sz := size
				if sz == 0 {
					sz = 1 + rng.IntN(3000)
				}
				spec.records = append(spec.records, testRecord{value: make([]byte, sz), offsetDelta: int32(i)})
			}
			b := buildBatch(t, spec, nil)
			recordbatch.Batch(b).SetBaseOffset(0)
			if _, err := l.AppendAsLeader(b, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendSome := func(k int) { t.Helper(); appendSized(k, 0, 0) }
	hits := 0
	check := func(when string) {
		t.Helper()
		l.mu.RLock()
		defer l.mu.RUnlock()
		seg := l.active()
		for target := seg.baseOffset; target <= seg.nextOffset; target++ {
			wantPos, wantH, wantFound, err := seg.findBatch(target)
			if err != nil {
				t.Fatal(err)
			}
			got, gotFound, err := seg.findBatchPos(target)
			gotPos, gotSize := got.pos, got.size
			if err != nil {
				t.Fatal(err)
			}
			if gotFound != wantFound || (wantFound && gotPos != wantPos) {
				t.Fatalf("%s: offset %d: remembered (%d, %v), headers (%d, %v)", when, target, gotPos, gotFound, wantPos, wantFound)
			}
			if wantFound && gotSize != 0 && gotSize != wantH.Size() {
				t.Fatalf("%s: offset %d: remembered size %d, header %d", when, target, gotSize, wantH.Size())
			}
			if _, ok := seg.tail.findEntry(target, seg.size); ok {
				hits++
			}
		}
	}
	appendSome(20)
	check("after appends")
	if hits == 0 {
		t.Fatal("no offset was answered from the remembered batches")
	}
	leo := l.LogEndOffset()
	if err := l.TruncateTo(leo - 3); err != nil {
		t.Fatal(err)
	}
	check("after a truncation")
	appendSome(5)
	check("after appends past a truncation")
	// Four small batches, a truncation to the third last, then one large
	// batch: the entries of the batches cut away now lie within the size.
	appendSized(4, 1, 100)
	leo = l.LogEndOffset()
	if err := l.TruncateTo(leo - 3); err != nil {
		t.Fatal(err)
	}
	appendSized(1, 5, 3000)
	check("after a truncation of several small batches and a large append")
	for range 40 { // 1 MiB segments: at least one roll
		appendSome(10)
		check("after more appends")
	}
	if len(l.segments) < 2 {
		t.Fatalf("%d segments, want a roll", len(l.segments))
	}
	// A truncation the entries have not seen an append after: the ones
	// past the size must not answer.
	l.mu.Lock()
	seg := l.active()
	if seg.tail == nil || seg.tail.n < 2 {
		l.mu.Unlock()
		t.Fatal("the active segment remembers fewer than two batches")
	}
	last := seg.tail.e[seg.tail.n-1]
	seg.size = last.pos
	if e, ok := seg.tail.findEntry(last.base, seg.size); ok {
		l.mu.Unlock()
		t.Fatalf("an entry past the size answered offset %d at %d", last.base, e.pos)
	}
	seg.size = last.end
	l.mu.Unlock()
}
