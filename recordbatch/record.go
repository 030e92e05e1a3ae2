package recordbatch

import (
	"errors"
	"fmt"
	"math"
)

// Structural errors of records. Each is a *FormatError.
var (
	ErrBodyShort         = &FormatError{"record body shorter than its fields"}
	ErrFieldTooLong      = &FormatError{"field length exceeds the record body"}
	ErrHeaderCount       = &FormatError{"negative record header count"}
	ErrHeaderKeyLength   = &FormatError{"negative record header key length"}
	ErrRecordLength      = &FormatError{"record length does not match its fields"}
	ErrNegativeLength    = &FormatError{"negative record length"}
	ErrRecordsRemaining  = &FormatError{"incorrect declared batch size, records still remaining"}
	ErrBatchEndsInRecord = &FormatError{"batch ends inside a record"}
)

// Record is one record of a batch. Key, Value and Headers alias the bytes
// it was parsed from; a nil Key or Value is null (a nil Value: a
// tombstone), an empty non-nil one is empty.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	HeaderCount    int32
	// Headers is the encoded headers after the count (see HeaderIter).
	Headers []byte
}

// ParseRecord parses one record body, the bytes after its length prefix,
// into r, with no allocation. Every error is a *FormatError, and for a
// body that is not exactly its fields the first problem in byte order
// decides which.
func ParseRecord(body []byte, r *Record) error {
	var f fields
	if parseRecordFast(body, &f) {
		*r = Record{
			Attributes:     int8(body[0]),
			TimestampDelta: f.TimestampDelta,
			OffsetDelta:    f.OffsetDelta,
			Key:            cut(body, int(f.keyAt), f.keyLen),
			Value:          cut(body, int(f.valueAt), f.valueLen),
			HeaderCount:    f.headers,
			Headers:        body[f.headersAt:],
		}
		return nil
	}
	return parseRecordChecked(body, r)
}

// RecordInfo is what ScanRecord reads of a record.
type RecordInfo struct {
	TimestampDelta int64
	OffsetDelta    int32
	HasKey         bool
}

// ScanRecord is ParseRecord for a reader that needs only the deltas and
// whether the key is null (storage's validation walk): the same checks and
// errors, without building the record's slices.
func ScanRecord(body []byte) (RecordInfo, error) {
	var f fields
	if parseRecordFast(body, &f) {
		return f.RecordInfo, nil
	}
	var r Record
	if err := parseRecordChecked(body, &r); err != nil {
		return RecordInfo{}, err
	}
	return RecordInfo{TimestampDelta: r.TimestampDelta, OffsetDelta: r.OffsetDelta, HasKey: r.Key != nil}, nil
}

// fields is a record body parsed as positions: the fast path fills it
// without storing a slice (no write barrier, nothing to copy back).
type fields struct {
	RecordInfo
	keyLen, valueLen, headers int32
	keyAt, valueAt, headersAt int32
}

// parseRecordFast parses a well-formed body; it gives up (false) on
// anything parseRecordChecked might refuse, so accepting here always
// agrees with it.
func parseRecordFast(b []byte, f *fields) bool {
	if len(b) == 0 || len(b) > math.MaxInt32 {
		return false
	}
	ts, n := Varlong(b[1:])
	if n <= 0 {
		return false
	}
	f.TimestampDelta = ts
	var p int
	var ok bool
	if f.OffsetDelta, p, ok = varintAt(b, 1+n); !ok {
		return false
	}
	if f.keyLen, p, ok = varintAt(b, p); !ok || int64(f.keyLen) > int64(len(b)-p) {
		return false
	}
	f.HasKey = f.keyLen >= 0
	f.keyAt = int32(p)
	p += int(max(f.keyLen, 0))
	if f.valueLen, p, ok = varintAt(b, p); !ok || int64(f.valueLen) > int64(len(b)-p) {
		return false
	}
	f.valueAt = int32(p)
	p += int(max(f.valueLen, 0))
	if f.headers, p, ok = varintAt(b, p); !ok || f.headers < 0 {
		return false
	}
	f.headersAt = int32(p)
	for h := int32(0); h < f.headers; h++ {
		for i := 0; i < 2; i++ { // key, value
			var l int32
			if l, p, ok = varintAt(b, p); !ok || (i == 0 && l < 0) || int64(l) > int64(len(b)-p) {
				return false
			}
			p += int(max(l, 0))
		}
	}
	return p == len(b)
}

// varintAt is Varint32 at b[p:] (p <= len(b)), with the position after it;
// ok is false for any n <= 0.
func varintAt(b []byte, p int) (v int32, next int, ok bool) {
	if p < len(b) && b[p] < 0x80 { // one byte: most lengths and deltas
		c := b[p]
		return int32(c>>1) ^ -int32(c&1), p + 1, true
	}
	if p+1 < len(b) && b[p+1] < 0x80 { // two bytes: the rest of the small ones
		ux := uint32(b[p]&0x7f) | uint32(b[p+1])<<7
		return int32(ux>>1) ^ -int32(ux&1), p + 2, true
	}
	v, n := Varint32(b[p:])
	return v, p + n, n > 0
}

// cut is the field of length n (< 0: null) at b[at:].
func cut(b []byte, at int, n int32) []byte {
	if n < 0 {
		return nil
	}
	e := at + int(n)
	return b[at:e:e]
}

// varintErr is the error of a Varint32 or Varlong result n <= 0.
func varintErr(n int) error {
	switch n {
	case VarintShort:
		return ErrBodyShort
	case VarintTooLong:
		return ErrVarintTooLong
	default:
		return ErrVarintRange
	}
}

// parseRecordChecked is ParseRecord's exact path, check by check.
func parseRecordChecked(b []byte, r *Record) error {
	*r = Record{}
	if len(b) == 0 { // attributes
		return ErrBodyShort
	}
	r.Attributes = int8(b[0])
	p := 1
	var n int
	if r.TimestampDelta, n = Varlong(b[p:]); n <= 0 {
		return varintErr(n)
	}
	p += n
	if r.OffsetDelta, n = Varint32(b[p:]); n <= 0 {
		return varintErr(n)
	}
	p += n
	var ok bool
	l, n := Varint32(b[p:]) // key length
	if n <= 0 {
		return varintErr(n)
	}
	if r.Key, p, ok = field(b, p+n, l); !ok {
		return ErrFieldTooLong
	}
	if l, n = Varint32(b[p:]); n <= 0 { // value length
		return varintErr(n)
	}
	if r.Value, p, ok = field(b, p+n, l); !ok {
		return ErrFieldTooLong
	}
	headers, n := Varint32(b[p:])
	if n <= 0 {
		return varintErr(n)
	}
	if headers < 0 {
		return ErrHeaderCount
	}
	p += n
	r.HeaderCount, r.Headers = headers, b[p:]
	for h := int32(0); h < headers; h++ {
		if l, n = Varint32(b[p:]); n <= 0 {
			return varintErr(n)
		}
		if l < 0 {
			return ErrHeaderKeyLength
		}
		if _, p, ok = field(b, p+n, l); !ok {
			return ErrFieldTooLong
		}
		if l, n = Varint32(b[p:]); n <= 0 {
			return varintErr(n)
		}
		if _, p, ok = field(b, p+n, l); !ok {
			return ErrFieldTooLong
		}
	}
	if p != len(b) {
		return ErrRecordLength
	}
	return nil
}

// RecordHeader is one record header; a nil Value is null.
type RecordHeader struct {
	Key, Value []byte
}

// HeaderIter walks the headers of a parsed Record.
type HeaderIter struct {
	b    []byte
	left int32
}

// HeaderIter returns an iterator over r's headers.
func (r *Record) HeaderIter() HeaderIter { return HeaderIter{b: r.Headers, left: r.HeaderCount} }

// Next returns the next header, false after the last (ParseRecord has
// checked them, so a parsed record's headers never fail here).
func (it *HeaderIter) Next() (RecordHeader, bool) {
	if it.left <= 0 {
		return RecordHeader{}, false
	}
	var h RecordHeader
	l, n := Varint32(it.b)
	if n <= 0 || l < 0 {
		it.left = 0
		return h, false
	}
	var ok bool
	var p int
	if h.Key, p, ok = field(it.b, n, l); !ok {
		it.left = 0
		return h, false
	}
	if l, n = Varint32(it.b[p:]); n <= 0 {
		it.left = 0
		return h, false
	}
	if h.Value, p, ok = field(it.b, p+n, l); !ok {
		it.left = 0
		return h, false
	}
	it.b, it.left = it.b[p:], it.left-1
	return h, true
}

// Iter walks the records of an uncompressed records section.
type Iter struct {
	b     []byte
	left  int32
	index int32
	err   error
}

// NewIter iterates over count records in records (a batch's records
// section, decompressed).
func NewIter(records []byte, count int32) Iter { return Iter{b: records, left: count} }

// Next parses the next record into r; false at the end or on an error
// (see Err).
func (it *Iter) Next(r *Record) bool {
	if it.err != nil {
		return false
	}
	if it.left <= 0 {
		if len(it.b) != 0 && it.left == 0 {
			it.err = ErrRecordsRemaining
		}
		it.left = -1
		return false
	}
	length, n := Varint32(it.b)
	switch {
	case n == VarintShort:
		it.err = ErrBatchEndsInRecord
	case n < 0:
		it.err = varintErr(n)
	case length < 0:
		it.err = ErrNegativeLength
	case int64(length) > int64(len(it.b)-n):
		it.err = ErrBatchEndsInRecord
	}
	if it.err != nil {
		return false
	}
	body := it.b[n : n+int(length)]
	if err := ParseRecord(body, r); err != nil {
		it.err = err
		return false
	}
	it.b = it.b[n+int(length):]
	it.left--
	it.index++
	return true
}

// Index is the number of records Next has returned.
func (it *Iter) Index() int32 { return it.index }

// Err is the error that stopped the iteration: a malformed record, or
// bytes after the last one.
func (it *Iter) Err() error { return it.err }

// AppendRecord appends r with its length prefix (r.Headers and
// r.HeaderCount are taken as they are: encoded headers).
func AppendRecord(dst []byte, r *Record) []byte {
	size := 1 + VarintLen(r.TimestampDelta) + VarintLen(int64(r.OffsetDelta)) +
		bytesLen(r.Key) + bytesLen(r.Value) + VarintLen(int64(r.HeaderCount)) + len(r.Headers)
	dst = AppendVarint(dst, int64(size))
	dst = append(dst, byte(r.Attributes))
	dst = AppendVarint(dst, r.TimestampDelta)
	dst = AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = AppendVarint(dst, int64(r.HeaderCount))
	return append(dst, r.Headers...)
}

// AppendHeader appends one encoded header (for Record.Headers).
func AppendHeader(dst []byte, key, value []byte) []byte {
	return appendBytes(appendBytes(dst, key), value)
}

func bytesLen(b []byte) int {
	if b == nil {
		return 1
	}
	return VarintLen(int64(len(b))) + len(b)
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return AppendVarint(dst, -1)
	}
	return append(AppendVarint(dst, int64(len(b))), b...)
}

// Decompressor returns the decompressed records section of a batch whose
// attributes name codec (1 gzip, 2 snappy, 3 lz4, 4 zstd).
type Decompressor func(codec int8, data []byte) ([]byte, error)

// Read checks a whole batch and returns its header and an iterator over its
// records, decompressed by decompress when the batch is compressed (nil
// decompress: a compressed batch is an error).
func Read(batch []byte, decompress Decompressor) (Header, Iter, error) {
	h, err := ReadHeader(batch)
	if err != nil {
		return h, Iter{}, err
	}
	records := batch[HeaderSize:]
	if c := h.Compression(); c != 0 {
		if decompress == nil {
			return h, Iter{}, ErrCompressed
		}
		if records, err = decompress(c, records); err != nil {
			return h, Iter{}, err
		}
	}
	return h, NewIter(records, h.RecordCount), nil
}

// ErrCompressed is Read's error for a compressed batch without a
// Decompressor.
var ErrCompressed = errors.New("compressed record batch")

// ForEach calls fn with the header and each record of a whole batch (see
// Read). An error of fn stops the walk and is returned as it is; a
// malformed batch or record is an error naming the batch's base offset.
func ForEach(batch []byte, decompress Decompressor, fn func(h *Header, r *Record) error) error {
	h, it, err := Read(batch, decompress)
	if err != nil {
		if len(batch) >= PosBatchLength {
			return fmt.Errorf("batch at offset %d: %w", Batch(batch).BaseOffset(), err)
		}
		return err
	}
	var r Record
	for it.Next(&r) {
		if err := fn(&h, &r); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("record %d of the batch at offset %d: %w", it.Index(), h.BaseOffset, err)
	}
	return nil
}

// field cuts a length-prefixed field (n < 0: null) at b[p:].
func field(b []byte, p int, n int32) ([]byte, int, bool) {
	if n < 0 {
		return nil, p, true
	}
	if int64(n) > int64(len(b)-p) {
		return nil, p, false
	}
	e := p + int(n)
	return b[p:e:e], e, true
}
