package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// walkOutcome is what a walk reports: every callback and the final error.
type walkOutcome struct {
	records []recordInfo
	err     string
}

func describeWalkErr(err error) string {
	if err == nil {
		return ""
	}
	var shape *errRecordShape
	var dec *errDecompress
	switch {
	case errors.As(err, &shape):
		return "shape: " + shape.Msg
	case errors.As(err, &dec):
		return "decompress: " + dec.Error()
	}
	return fmt.Sprintf("%T: %v", err, err)
}

// walkBoth walks payload (a records section, compressed with codec) with
// the walker and the reference; stopAt >= 0 makes the callback fail there.
func walkBoth(codec compress.Codec, payload []byte, count int32, stopAt int32) (got, want walkOutcome) {
	batch := append(make([]byte, recordbatch.HeaderSize), payload...)
	h := batchHeader{recordbatch.Header{Attributes: int16(codec), RecordCount: count}}
	errStop := errors.New("stop")
	run := func(walk func([]byte, *batchHeader, func(int32, recordInfo) error) error) walkOutcome {
		var o walkOutcome
		err := walk(batch, &h, func(i int32, r recordInfo) error {
			o.records = append(o.records, r)
			if i == stopAt {
				return errStop
			}
			return nil
		})
		o.err = describeWalkErr(err)
		return o
	}
	return run(walkBatchRecords), run(refWalkBatchRecords)
}

func randomRecords(rng *rand.Rand, n int, big bool) ([]byte, []testRecord) {
	var raw []byte
	var rs []testRecord
	for i := 0; i < n; i++ {
		r := testRecord{offsetDelta: int32(i), tsDelta: rng.Int64N(1 << 40)}
		if rng.IntN(3) > 0 {
			r.key = make([]byte, rng.IntN(20))
		}
		size := rng.IntN(300)
		if big && rng.IntN(4) == 0 {
			size = recordWindowSize - 40 + rng.IntN(200) // around the window's size
		}
		if rng.IntN(10) > 0 {
			r.value = make([]byte, size)
			for j := range r.value {
				r.value[j] = byte('a' + rng.IntN(4))
			}
		}
		for range rng.IntN(3) {
			r.headers = append(r.headers, [2][]byte{[]byte("h"), nil})
		}
		rs = append(rs, r)
		raw = append(raw, encodeRecord(r)...)
	}
	return raw, rs
}

// TestWalkRecordsMatchesReference compares the windowed walker with the
// byte-at-a-time reference on valid, damaged and cut-short record
// sections under every codec, including records larger than the window.
func TestWalkRecordsMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	codecs := []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd}
	for iter := 0; iter < 400; iter++ {
		n := 1 + rng.IntN(40)
		raw, _ := randomRecords(rng, n, iter%8 == 0)
		count := int32(n)
		switch rng.IntN(6) {
		case 0: // flip bytes
			for range 1 + rng.IntN(4) {
				raw[rng.IntN(len(raw))] ^= byte(1 << rng.IntN(8))
			}
		case 1: // cut short
			raw = raw[:rng.IntN(len(raw))]
		case 2: // trailing bytes
			raw = append(raw, byte(rng.IntN(256)))
		case 3: // count off by one
			count += int32(rng.IntN(3)) - 1
		}
		stopAt := int32(-1)
		if rng.IntN(5) == 0 {
			stopAt = int32(rng.IntN(n))
		}
		for _, codec := range codecs {
			payload, err := compress.Compress(codec, nil, raw)
			if err != nil {
				t.Fatal(err)
			}
			if codec != compress.None && rng.IntN(4) == 0 { // damage the compressed form
				payload[rng.IntN(len(payload))] ^= 0x55
				if rng.IntN(2) == 0 {
					payload = payload[:rng.IntN(len(payload))]
				}
			}
			got, want := walkBoth(codec, payload, count, stopAt)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("iteration %d, %s, %d records: got %d records, %q; reference %d records, %q",
					iter, codec, count, len(got.records), got.err, len(want.records), want.err)
			}
		}
	}
}

// FuzzWalkRecordsMatchesReference: any bytes as a records section, under
// any codec, walk the same with both walkers.
func FuzzWalkRecordsMatchesReference(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 1))
	raw, _ := randomRecords(rng, 5, false)
	f.Add(raw, int32(5), uint8(0), false)
	f.Add(raw[:len(raw)-3], int32(5), uint8(0), false)
	f.Add(raw, int32(5), uint8(3), true)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, int32(1), uint8(0), false)
	f.Fuzz(func(t *testing.T, data []byte, count int32, codec uint8, compressFirst bool) {
		c := compress.Codec(codec % 5)
		if count < 0 || count > 1<<16 {
			return
		}
		payload := data
		if compressFirst && c != compress.None {
			var err error
			if payload, err = compress.Compress(c, nil, data); err != nil {
				t.Fatal(err)
			}
		}
		got, want := walkBoth(c, payload, count, -1)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s, %d records: got %d records, %q; reference %d records, %q",
				c, count, len(got.records), got.err, len(want.records), want.err)
		}
	})
}
