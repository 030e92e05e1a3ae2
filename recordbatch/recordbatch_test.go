package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type testRec struct {
	key, value []byte
	headers    [][2][]byte
	tsDelta    int64
}

func buildTest(t testing.TB, recs []testRec) []byte {
	t.Helper()
	b := NewBuilder(1_700_000_000_000)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = 42, 3, 7
	for i, r := range recs {
		rec := Record{OffsetDelta: int32(i), TimestampDelta: r.tsDelta, Key: r.key, Value: r.value, HeaderCount: int32(len(r.headers))}
		for _, h := range r.headers {
			rec.Headers = AppendHeader(rec.Headers, h[0], h[1])
		}
		b.AddRecord(&rec)
	}
	return b.Build()
}

var sampleRecords = []testRec{
	{key: []byte("k1"), value: []byte("v1")},
	{key: nil, value: []byte("null key")},
	{key: []byte("tombstone"), value: nil},
	{key: []byte{}, value: []byte{}, tsDelta: 5},
	{key: []byte("h"), value: bytes.Repeat([]byte("x"), 300), headers: [][2][]byte{{[]byte("a"), []byte("1")}, {[]byte("b"), nil}}, tsDelta: 1000},
}

func TestBuilderRoundTrip(t *testing.T) {
	batch := buildTest(t, sampleRecords)
	if err := Check(batch); err != nil {
		t.Fatal(err)
	}
	if !Batch(batch).CRCValid() {
		t.Fatal("CRC not valid")
	}
	h, it, err := Read(batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.RecordCount != int32(len(sampleRecords)) || h.LastOffsetDelta != int32(len(sampleRecords)-1) ||
		h.MaxTimestamp != 1_700_000_000_000+1000 || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != 7 ||
		h.LeaderEpoch != -1 || h.Size() != int64(len(batch)) || h.IsTransactional() || h.IsControl() {
		t.Fatalf("header %+v", h)
	}
	var r Record
	for i, want := range sampleRecords {
		if !it.Next(&r) {
			t.Fatalf("record %d: stopped: %v", i, it.Err())
		}
		if r.OffsetDelta != int32(i) || r.TimestampDelta != want.tsDelta {
			t.Errorf("record %d deltas %d %d", i, r.OffsetDelta, r.TimestampDelta)
		}
		if !bytes.Equal(r.Key, want.key) || (r.Key == nil) != (want.key == nil) {
			t.Errorf("record %d key %q (nil %v)", i, r.Key, r.Key == nil)
		}
		if !bytes.Equal(r.Value, want.value) || (r.Value == nil) != (want.value == nil) {
			t.Errorf("record %d value %q (nil %v)", i, r.Value, r.Value == nil)
		}
		hi := r.HeaderIter()
		for j, wh := range want.headers {
			got, ok := hi.Next()
			if !ok || !bytes.Equal(got.Key, wh[0]) || !bytes.Equal(got.Value, wh[1]) || (got.Value == nil) != (wh[1] == nil) {
				t.Errorf("record %d header %d: %q %q %v", i, j, got.Key, got.Value, ok)
			}
		}
		if _, ok := hi.Next(); ok {
			t.Errorf("record %d: extra header", i)
		}
	}
	if it.Next(&r) || it.Err() != nil {
		t.Fatalf("after the last record: %v", it.Err())
	}

	// kmsg reads the same batch and records.
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(batch); err != nil {
		t.Fatal(err)
	}
	if kb.CRC != int32(crc32.Checksum(batch[PosAttributes:], crc32.MakeTable(crc32.Castagnoli))) || kb.NumRecords != 5 {
		t.Fatalf("kmsg batch %+v", kb)
	}
	recs := kb.Records
	for i := range sampleRecords {
		length, n := binary.Varint(recs)
		var kr kmsg.Record
		if err := kr.ReadFrom(recs[:n+int(length)]); err != nil {
			t.Fatalf("kmsg record %d: %v", i, err)
		}
		if !bytes.Equal(kr.Key, sampleRecords[i].key) || !bytes.Equal(kr.Value, sampleRecords[i].value) || len(kr.Headers) != len(sampleRecords[i].headers) {
			t.Errorf("kmsg record %d: %+v", i, kr)
		}
		recs = recs[n+int(length):]
	}
}

func TestHeaderAccessorsMatchKmsg(t *testing.T) {
	rec := kmsg.Record{Key: []byte("k"), Value: []byte("v"), OffsetDelta: 2}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	body := rec.AppendTo(nil)
	kb := kmsg.RecordBatch{
		FirstOffset:          1234567890123,
		PartitionLeaderEpoch: 17,
		Magic:                2,
		Attributes:           AttrTransactional | AttrTimestampType | 3, // lz4 bits, not compressed: accessors only
		LastOffsetDelta:      2,
		FirstTimestamp:       -5,
		MaxTimestamp:         math.MaxInt64 - 1,
		ProducerID:           987654321,
		ProducerEpoch:        -2,
		FirstSequence:        math.MaxInt32,
		NumRecords:           1,
		Records:              body,
	}
	kb.Length = int32(HeaderSize - LogOverhead + len(body))
	raw := kb.AppendTo(nil)
	Batch(raw).SetCRC()
	b := Batch(raw)
	if b.BaseOffset() != kb.FirstOffset || b.BatchLength() != kb.Length || b.LeaderEpoch() != kb.PartitionLeaderEpoch ||
		b.Magic() != 2 || b.Attributes() != kb.Attributes || b.LastOffsetDelta() != 2 || b.BaseTimestamp() != -5 ||
		b.MaxTimestamp() != kb.MaxTimestamp || b.ProducerID() != kb.ProducerID || b.ProducerEpoch() != -2 ||
		b.BaseSequence() != math.MaxInt32 || b.RecordCount() != 1 || b.LastOffset() != kb.FirstOffset+2 ||
		b.Compression() != 3 || !b.IsTransactional() || b.IsControl() || !bytes.Equal(b.Records(), body) {
		t.Fatal("accessors disagree with kmsg")
	}
	h, err := ReadHeader(raw)
	if err != nil {
		t.Fatal(err)
	}
	if h != b.Header() || h.BaseOffset != kb.FirstOffset || h.MaxTimestamp != kb.MaxTimestamp || !h.LogAppendTime() ||
		h.NextOffset() != kb.FirstOffset+3 || h.CRC != b.CRC() {
		t.Fatalf("header %+v", h)
	}
	var back kmsg.RecordBatch
	if err := back.ReadFrom(raw); err != nil || uint32(back.CRC) != b.CRC() {
		t.Fatalf("kmsg reading back: %v", err)
	}
	// Put writes the same header bytes.
	out := make([]byte, len(raw))
	copy(out[HeaderSize:], raw[HeaderSize:])
	h.Put(out)
	if !bytes.Equal(out, raw) {
		t.Fatal("Put differs from kmsg's encoding")
	}
}

func TestCRC(t *testing.T) {
	batch := Batch(buildTest(t, sampleRecords))
	want := crc32.Checksum(batch[PosAttributes:], crc32.MakeTable(crc32.Castagnoli))
	if batch.CRC() != want || batch.ComputeCRC() != want {
		t.Fatalf("crc %x, want %x", batch.CRC(), want)
	}
	// The broker-owned fields lie outside the CRC.
	batch.SetBaseOffset(99)
	batch.SetLeaderEpoch(5)
	if !batch.CRCValid() || batch.BaseOffset() != 99 || batch.LeaderEpoch() != 5 {
		t.Fatal("base offset or leader epoch changed the CRC")
	}
	for _, pos := range []int{PosAttributes, PosProducerID, HeaderSize, len(batch) - 1} {
		c := Batch(bytes.Clone(batch))
		c[pos] ^= 0x40
		if c.CRCValid() {
			t.Errorf("flipping byte %d kept the CRC valid", pos)
		}
	}
	batch.SetMaxTimestamp(true, 77)
	if !batch.CRCValid() || batch.MaxTimestamp() != 77 || batch.Attributes()&AttrTimestampType == 0 {
		t.Fatal("SetMaxTimestamp")
	}
	crc := batch.CRC()
	batch.SetMaxTimestamp(true, 77)
	if batch.CRC() != crc {
		t.Fatal("an unchanged SetMaxTimestamp changed the CRC")
	}
}

func TestVarints(t *testing.T) {
	values := []int64{0, 1, -1, 63, -64, 64, -65, 127, 128, 8191, -8192, 1 << 20, math.MaxInt32, math.MinInt32,
		math.MaxInt32 + 1, math.MinInt32 - 1, 1 << 40, math.MaxInt64, math.MinInt64}
	for _, v := range values {
		enc := AppendVarint(nil, v)
		if std := binary.AppendVarint(nil, v); !bytes.Equal(enc, std) {
			t.Errorf("%d: encoded % x, encoding/binary % x", v, enc, std)
		}
		if VarintLen(v) != len(enc) {
			t.Errorf("%d: VarintLen %d, encoded %d", v, VarintLen(v), len(enc))
		}
		got, n := Varlong(enc)
		if got != v || n != len(enc) {
			t.Errorf("Varlong(%d) = %d, %d", v, got, n)
		}
		got32, n := Varint32(enc)
		switch {
		case v == int64(int32(v)):
			if got32 != int32(v) || n != len(enc) {
				t.Errorf("Varint32(%d) = %d, %d", v, got32, n)
			}
		case len(enc) > 5:
			if n != VarintTooLong {
				t.Errorf("Varint32(%d): n %d, want too long", v, n)
			}
		default:
			if n != VarintRange {
				t.Errorf("Varint32(%d): n %d, want out of range", v, n)
			}
		}
		// varintAt, the record parser's form, agrees with Varint32.
		at, next, ok := varintAt(append([]byte{9}, enc...), 1)
		if want, n := Varint32(enc); ok != (n > 0) || (ok && (at != want || next != 1+n)) {
			t.Errorf("varintAt(%d) = %d, %d, %v; Varint32 %d, %d", v, at, next, ok, want, n)
		}
		for cut := 0; cut < len(enc); cut++ {
			if _, _, ok := varintAt(enc[:cut], 0); ok {
				t.Errorf("varintAt(%d cut at %d) ok", v, cut)
			}
			if _, n := Varlong(enc[:cut]); n != VarintShort {
				t.Errorf("Varlong(%d cut at %d): n %d", v, cut, n)
			}
		}
		if Unzigzag(binary.BigEndian.Uint64(append(make([]byte, 0, 8), 0, 0, 0, 0, 0, 0, 0, 3))) != -2 {
			t.Fatal("Unzigzag(3)")
		}
	}
	// Continuation bits beyond the type's length.
	if _, n := Varint32(bytes.Repeat([]byte{0x80}, 6)); n != VarintTooLong {
		t.Errorf("6-byte varint: n %d", n)
	}
	if _, n := Varlong(bytes.Repeat([]byte{0xff}, 11)); n != VarintTooLong {
		t.Errorf("11-byte varlong: n %d", n)
	}
	// Kafka's readVarlong drops the tenth byte's high bits.
	if _, n := Varlong(append(bytes.Repeat([]byte{0xff}, 9), 0x7f)); n != 10 {
		t.Errorf("10-byte varlong: n %d", n)
	}
	if _, n := Varint32(nil); n != VarintShort {
		t.Error("empty varint")
	}
}

func TestTruncatedAndMalformed(t *testing.T) {
	batch := buildTest(t, sampleRecords)
	for cut := 0; cut < len(batch); cut++ {
		b := batch[:cut]
		if Check(b) == nil {
			t.Fatalf("Check accepted a batch cut at %d", cut)
		}
		if err := ForEach(b, nil, func(*Header, *Record) error { return nil }); err == nil {
			t.Fatalf("ForEach accepted a batch cut at %d", cut)
		}
		if cut >= HeaderSize {
			// A records section cut short, with the count unchanged.
			it := NewIter(b[HeaderSize:], int32(len(sampleRecords)))
			var r Record
			for it.Next(&r) {
			}
			if it.Err() == nil || !IsFormatError(it.Err()) {
				t.Fatalf("records cut at %d: %v", cut, it.Err())
			}
		}
	}
	// Every prefix of a record body but the whole one is an error.
	body := AppendRecord(nil, &Record{Key: []byte("key"), Value: []byte("value"), HeaderCount: 1, Headers: AppendHeader(nil, []byte("h"), []byte("v"))})
	_, n := Varint32(body)
	body = body[n:]
	var r Record
	for cut := 0; cut < len(body); cut++ {
		if err := ParseRecord(body[:cut], &r); err == nil || !IsFormatError(err) {
			t.Fatalf("body cut at %d: %v", cut, err)
		}
	}
	if err := ParseRecord(append(bytes.Clone(body), 0), &r); !errors.Is(err, ErrRecordLength) {
		t.Fatalf("trailing byte: %v", err)
	}
	cases := map[string]struct {
		body []byte
		want error
	}{
		"negative header count": {append([]byte{0, 0, 0, 1, 1}, AppendVarint(nil, -1)...), ErrHeaderCount},
		"negative header key":   {append([]byte{0, 0, 0, 1, 1, 2}, AppendVarint(nil, -1)...), ErrHeaderKeyLength},
		"key past the end":      {[]byte{0, 0, 0, 20}, ErrFieldTooLong},
		"overlong varint":       {append([]byte{0, 0}, bytes.Repeat([]byte{0x80}, 6)...), ErrVarintTooLong},
		"offset delta range":    {append([]byte{0, 0}, AppendVarint(nil, math.MaxInt32+1)...), ErrVarintRange},
	}
	for name, c := range cases {
		if err := ParseRecord(c.body, &r); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	// Extra bytes after the declared records; a negative record length.
	extra := append(bytes.Clone(batch[HeaderSize:]), 0)
	it := NewIter(extra, int32(len(sampleRecords)))
	for it.Next(&r) {
	}
	if !errors.Is(it.Err(), ErrRecordsRemaining) {
		t.Fatalf("extra byte: %v", it.Err())
	}
	it = NewIter(AppendVarint(nil, -2), 1)
	if it.Next(&r) || !errors.Is(it.Err(), ErrNegativeLength) {
		t.Fatalf("negative length: %v", it.Err())
	}
	// A wrong magic and a compressed batch without a decompressor.
	bad := bytes.Clone(batch)
	bad[PosMagic] = 1
	if _, err := ReadHeader(bad); !errors.Is(err, ErrMagic) {
		t.Fatalf("magic 1: %v", err)
	}
	comp := bytes.Clone(batch)
	comp[PosAttributes+1] |= 2
	if _, _, err := Read(comp, nil); !errors.Is(err, ErrCompressed) {
		t.Fatalf("compressed: %v", err)
	}
}

// TestRandomInputNeverPanics feeds random and mutated bytes to every parser.
func TestRandomInputNeverPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	good := buildTest(t, sampleRecords)
	var r Record
	for i := 0; i < 20000; i++ {
		var b []byte
		if i%2 == 0 {
			b = make([]byte, rng.IntN(200))
			for j := range b {
				b[j] = byte(rng.UintN(256))
			}
		} else {
			b = bytes.Clone(good)
			for k := 0; k < 1+rng.IntN(4); k++ {
				b[rng.IntN(len(b))] = byte(rng.UintN(256))
			}
			b = b[:rng.IntN(len(b)+1)]
		}
		_ = ParseRecord(b, &r)
		it := NewIter(b, int32(rng.IntN(10)))
		for n := 0; it.Next(&r) && n < 100; n++ {
			hi := r.HeaderIter()
			for m := 0; m < 100; m++ {
				if _, ok := hi.Next(); !ok {
					break
				}
			}
		}
		_ = ForEach(b, nil, func(*Header, *Record) error { return nil })
		_, _ = ParseMarker(b)
		_ = WholeBatches(b)
		_, _ = FirstBatchCompression(b)
	}
}

func FuzzParseRecord(f *testing.F) {
	body := AppendRecord(nil, &Record{Key: []byte("k"), Value: []byte("v")})
	f.Add(body)
	f.Add(buildTest(f, sampleRecords)[HeaderSize:])
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		if err := ParseRecord(b, &r); err == nil {
			// Whatever parses re-encodes to the same length.
			out := AppendRecord(nil, &r)
			if _, n := Varint32(out); len(out)-n > len(b) {
				t.Fatalf("re-encoded %d bytes from %d", len(out)-n, len(b))
			}
		}
		it := NewIter(b, 3)
		for it.Next(&r) {
		}
	})
}

func TestSplit(t *testing.T) {
	a := buildTest(t, sampleRecords[:1])
	b := buildTest(t, sampleRecords[1:3])
	set := append(bytes.Clone(a), b...)
	first, rest, ok := Split(set)
	if !ok || !bytes.Equal(first, a) || !bytes.Equal(rest, b) {
		t.Fatal("Split")
	}
	if got := WholeBatches(append(bytes.Clone(set), b[:30]...)); !bytes.Equal(got, set) {
		t.Fatalf("WholeBatches kept %d bytes, want %d", len(got), len(set))
	}
	if _, _, ok := Split(a[:11]); ok {
		t.Fatal("Split of 11 bytes")
	}
	// A batchLength of 0 still frames 12 bytes (storage refuses the batch
	// itself), as the follower's fetch handling always cut it.
	zero := make([]byte, LogOverhead)
	if got := WholeBatches(append(bytes.Clone(zero), a...)); len(got) != LogOverhead+len(a) {
		t.Fatalf("zero-length batch: kept %d bytes", len(got))
	}
	neg := bytes.Clone(a)
	binary.BigEndian.PutUint32(neg[PosBatchLength:], 0xffffffff)
	if _, _, ok := Split(neg); ok || len(WholeBatches(neg)) != 0 {
		t.Fatal("negative batch length")
	}
}

func TestMarkers(t *testing.T) {
	for _, commit := range []bool{false, true} {
		m := EndTxnMarker{ProducerID: 12, ProducerEpoch: 4, CoordinatorEpoch: 9, Commit: commit}
		b := MarkerBatch(m, 555)
		if err := Check(b); err != nil || !Batch(b).CRCValid() {
			t.Fatal(err)
		}
		h := ParseHeader(b)
		if !h.IsControl() || !h.IsTransactional() || h.BaseSequence != -1 || h.MaxTimestamp != 555 || h.RecordCount != 1 {
			t.Fatalf("marker header %+v", h)
		}
		got, ok := ParseMarker(b)
		if !ok || got != m {
			t.Fatalf("ParseMarker = %+v %v, want %+v", got, ok, m)
		}
		// kmsg decodes the control key and EndTxnMarker value.
		_, it, _ := Read(b, nil)
		var r Record
		it.Next(&r)
		var k kmsg.ControlRecordKey
		var v kmsg.EndTxnMarker
		if err := k.ReadFrom(r.Key); err != nil || (k.Type == kmsg.ControlRecordKeyTypeCommit) != commit {
			t.Fatalf("control key %+v %v", k, err)
		}
		if err := v.ReadFrom(r.Value); err != nil || v.CoordinatorEpoch != 9 {
			t.Fatalf("marker value %+v %v", v, err)
		}
	}
	empty := NewBuilder(1)
	empty.Control = true
	if _, ok := ParseMarker(empty.Build()); ok {
		t.Fatal("an empty control batch parsed as a marker")
	}
}

func TestPartitionForMatchesJavaHashing(t *testing.T) {
	for _, tc := range []struct {
		s    string
		hash int32
	}{
		{"", 0},
		{"hello", 99162322},
		{"Aa", 2112},
		{"BB", 2112},
		{"polygenelubricants", math.MinInt32}, // Utils.abs maps it to 0
		{"€", 8364},
		{"𝄞", 55348*31 + 56606}, // a surrogate pair counts as two code units
	} {
		if got := JavaStringHash(tc.s); got != tc.hash {
			t.Errorf("JavaStringHash(%q) = %d, want %d", tc.s, got, tc.hash)
		}
	}
	if PartitionFor("polygenelubricants", 50) != 0 || PartitionFor("hello", 50) != 99162322%50 || PartitionFor("x", 0) != 0 {
		t.Fatal("PartitionFor")
	}
	if !IsInternalTopic(ConsumerOffsetsTopic) || !IsInternalTopic(TransactionStateTopic) || IsInternalTopic("orders") {
		t.Fatal("IsInternalTopic")
	}
}

func TestFirstBatchCompression(t *testing.T) {
	b := buildTest(t, sampleRecords[:1])
	if c, ok := FirstBatchCompression(b); !ok || c != 0 {
		t.Fatal("uncompressed")
	}
	b[PosAttributes+1] |= 4
	if c, ok := FirstBatchCompression(b); !ok || c != 4 {
		t.Fatal("zstd bits")
	}
	if _, ok := FirstBatchCompression(b[:PosAttributes+1]); ok {
		t.Fatal("short")
	}
}
