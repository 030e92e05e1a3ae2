package storage

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// A v2 record (inside a batch's records section, possibly compressed):
//
//	length         varint  bytes that follow
//	attributes     int8    unused
//	timestampDelta varlong from the batch's baseTimestamp
//	offsetDelta    varint  from the batch's baseOffset
//	keyLength      varint  -1 = null
//	key            bytes
//	valueLength    varint  -1 = null
//	value          bytes
//	headerCount    varint
//	headers        [keyLength varint, key, valueLength varint, value]...
//
// Varints are zigzag encoded.

// recordInfo is what validation and timestamp searches need of a record.
type recordInfo struct {
	OffsetDelta    int32
	TimestampDelta int64
	HasKey         bool
}

// errRecordShape reports a structural error in a record; walkRecords turns
// it into INVALID_RECORD.
type errRecordShape struct{ msg string }

func (e *errRecordShape) Error() string { return e.msg }

func shapeErr(msg string) error { return &errRecordShape{msg} }

// recordWindow is the source of a batch's records section: the section
// itself for an uncompressed batch (src nil), or a pooled window refilled
// from the decompressor. A record that lies whole in the window is parsed
// from the slice (parseRecordSlice); one that does not (larger than the
// window, or cut short by the end of the data or a codec error) is parsed
// a byte at a time (parseRecordBody), so the first problem met in stream
// order decides the error, whichever path runs.
type recordWindow struct {
	buf  []byte // buf[pos:] is buffered and unread
	pos  int
	src  io.Reader // the decompressor; nil: buf is the whole records section
	err  error     // src's error (errDecompress but for io.EOF), returned once buf is drained, as bufio does
	back *[]byte   // pooled backing store of buf (compressed only)
}

// recordWindowSize is the window of a compressed batch: larger records
// take the byte-at-a-time path.
const recordWindowSize = 64 << 10

var recordWindows = sync.Pool{New: func() any { b := make([]byte, recordWindowSize); return &b }}

func (w *recordWindow) avail() int { return len(w.buf) - w.pos }

// fill tries to buffer at least want bytes (want <= recordWindowSize),
// keeping any error for when the buffered bytes run out.
func (w *recordWindow) fill(want int) {
	if w.src == nil || w.err != nil || w.avail() >= want {
		return
	}
	back := *w.back
	n := copy(back, w.buf[w.pos:])
	w.buf, w.pos = back[:n], 0
	for empty := 0; len(w.buf) < want; {
		m, err := w.src.Read(back[len(w.buf):])
		w.buf = back[:len(w.buf)+m]
		if err != nil {
			w.err = err
			if err != io.EOF {
				w.err = &errDecompress{err} // src is a decompressor
			}
			return
		}
		if m == 0 {
			if empty++; empty >= 100 {
				w.err = io.ErrNoProgress
				return
			}
		}
	}
}

func (w *recordWindow) ReadByte() (byte, error) {
	if w.pos >= len(w.buf) {
		if w.src == nil {
			return 0, io.EOF
		}
		w.fill(1)
		if w.avail() == 0 {
			return 0, w.err
		}
	}
	c := w.buf[w.pos]
	w.pos++
	return c, nil
}

func (w *recordWindow) Discard(n int) (int, error) {
	done := 0
	for {
		k := min(n-done, w.avail())
		w.pos += k
		done += k
		if done == n {
			return done, nil
		}
		if w.src == nil {
			return done, io.EOF
		}
		w.fill(min(n-done, recordWindowSize))
		if w.avail() == 0 {
			return done, w.err
		}
	}
}

// bodyReader parses one record body, refusing to read past its declared
// length.
type bodyReader struct {
	src  *recordWindow
	left int64
}

func (r *bodyReader) byte() (byte, error) {
	if r.left <= 0 {
		return 0, errBodyShort
	}
	c, err := r.src.ReadByte()
	if err != nil {
		return 0, err
	}
	r.left--
	return c, nil
}

// varlong reads a zigzag varint of at most maxBytes bytes.
func (r *bodyReader) varlong(maxBytes int) (int64, error) {
	var ux uint64
	for i := 0; i < maxBytes; i++ {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		ux |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(ux>>1) ^ -int64(ux&1), nil
		}
	}
	return 0, errVarintTooLong
}

func (r *bodyReader) varint() (int32, error) {
	v, err := r.varlong(5)
	if err != nil {
		return 0, err
	}
	if v != int64(int32(v)) {
		return 0, errVarintRange
	}
	return int32(v), nil
}

// skip discards n bytes of the body (n < 0 means a null field).
func (r *bodyReader) skip(n int32) error {
	if n <= 0 {
		return nil
	}
	if int64(n) > r.left {
		return errFieldTooLong
	}
	got, err := r.src.Discard(int(n))
	r.left -= int64(got)
	if err != nil {
		return err
	}
	return nil
}

// readVarintFrom reads a zigzag int32 varint straight from src (the
// record length prefix, before the body budget is known).
func readVarintFrom(src *recordWindow) (int32, error) {
	var ux uint64
	for i := 0; i < 5; i++ {
		c, err := src.ReadByte()
		if err != nil {
			return 0, err
		}
		ux |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			v := int64(ux>>1) ^ -int64(ux&1)
			if v != int64(int32(v)) {
				return 0, shapeErr("varint out of int32 range")
			}
			return int32(v), nil
		}
	}
	return 0, shapeErr("varint too long")
}

// walkRecords parses count records from src, calling fn for each, and
// checks that nothing follows the last one. Structural problems and
// premature ends are errRecordShape; decompression failures are returned
// as they come.
func walkRecords(src *recordWindow, count int32, fn func(i int32, r recordInfo) error) error {
	for i := int32(0); i < count; i++ {
		src.fill(maxRecordLengthPrefix)
		length, n := sliceVarint(src.buf[src.pos:])
		switch {
		case n < 0:
			return shapeErr("varint out of int32 range")
		case n == 0:
			// The prefix is not all buffered: byte at a time, which
			// reports the end or the codec error where it comes.
			var err error
			if length, err = readVarintFrom(src); err != nil {
				return eofAsShape(err)
			}
		default:
			src.pos += n
		}
		if length < 0 {
			return shapeErr("negative record length")
		}
		if int(length) > src.avail() && int(length) <= recordWindowSize {
			src.fill(int(length))
		}
		var rec recordInfo
		if int(length) <= src.avail() {
			var err error
			if rec, err = parseRecordSlice(src.buf[src.pos : src.pos+int(length)]); err != nil {
				return err
			}
			src.pos += int(length)
		} else {
			body := bodyReader{src: src, left: int64(length)}
			var err error
			if rec, err = parseRecordBody(&body); err != nil {
				return eofAsShape(err)
			}
			if body.left != 0 {
				return shapeErr("record length does not match its fields")
			}
		}
		if fn != nil {
			if err := fn(i, rec); err != nil {
				return err
			}
		}
	}
	if _, err := src.ReadByte(); err == nil {
		return shapeErr("incorrect declared batch size, records still remaining")
	} else if err != io.EOF {
		return err
	}
	return nil
}

// maxRecordLengthPrefix is the longest varint readVarintFrom accepts.
const maxRecordLengthPrefix = 5

// sliceVarint decodes readVarintFrom's zigzag int32 varint from the start
// of b: n > 0 bytes read; n == 0 if b ends before the varint does (the
// caller then reads it byte by byte, which reports that end as it comes);
// n < 0 if it is out of int32 range. A varint longer than 5 bytes also
// gives 0, so that the byte-at-a-time path reports it.
func sliceVarint(b []byte) (int32, int) {
	var ux uint64
	for i := 0; i < maxRecordLengthPrefix && i < len(b); i++ {
		c := b[i]
		ux |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			v := int64(ux>>1) ^ -int64(ux&1)
			if v != int64(int32(v)) {
				return 0, -1
			}
			return int32(v), i + 1
		}
	}
	return 0, 0
}

func eofAsShape(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return shapeErr("batch ends inside a record")
	}
	return err
}

func parseRecordBody(r *bodyReader) (recordInfo, error) {
	var rec recordInfo
	if _, err := r.byte(); err != nil { // attributes
		return rec, err
	}
	var err error
	if rec.TimestampDelta, err = r.varlong(10); err != nil {
		return rec, err
	}
	if rec.OffsetDelta, err = r.varint(); err != nil {
		return rec, err
	}
	keyLen, err := r.varint()
	if err != nil {
		return rec, err
	}
	rec.HasKey = keyLen >= 0
	if err := r.skip(keyLen); err != nil {
		return rec, err
	}
	valueLen, err := r.varint()
	if err != nil {
		return rec, err
	}
	if err := r.skip(valueLen); err != nil {
		return rec, err
	}
	headers, err := r.varint()
	if err != nil {
		return rec, err
	}
	if headers < 0 {
		return rec, shapeErr("negative record header count")
	}
	for h := int32(0); h < headers; h++ {
		kl, err := r.varint()
		if err != nil {
			return rec, err
		}
		if kl < 0 {
			return rec, shapeErr("negative record header key length")
		}
		if err := r.skip(kl); err != nil {
			return rec, err
		}
		vl, err := r.varint()
		if err != nil {
			return rec, err
		}
		if err := r.skip(vl); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// parseRecordSlice is parseRecordBody over a body held whole in b: the
// same checks in the same order, with the same errors, without a call per
// byte. Every error is an errRecordShape: with the whole body at hand,
// nothing else can go wrong.
func parseRecordSlice(b []byte) (recordInfo, error) {
	if rec, ok := parseRecordFast(b); ok {
		return rec, nil
	}
	return parseRecordChecked(b)
}

// parseRecordFast parses a well-formed record body with binary.Uvarint; it
// gives up (ok false) on anything parseRecordChecked might refuse or read
// differently, so accepting here always agrees with it.
func parseRecordFast(b []byte) (rec recordInfo, ok bool) {
	if len(b) == 0 {
		return rec, false
	}
	p := 1 // attributes
	ux, n := binary.Uvarint(b[p:])
	if n <= 0 {
		return rec, false
	}
	p += n
	rec.TimestampDelta = int64(ux>>1) ^ -int64(ux&1)
	var v int32
	if v, p, ok = fastVarint32(b, p); !ok {
		return rec, false
	}
	rec.OffsetDelta = v
	if v, p, ok = fastVarint32(b, p); !ok { // key length
		return rec, false
	}
	rec.HasKey = v >= 0
	if v > 0 {
		if int64(v) > int64(len(b)-p) {
			return rec, false
		}
		p += int(v)
	}
	if v, p, ok = fastVarint32(b, p); !ok { // value length
		return rec, false
	}
	if v > 0 {
		if int64(v) > int64(len(b)-p) {
			return rec, false
		}
		p += int(v)
	}
	headers, p, ok := fastVarint32(b, p)
	if !ok || headers < 0 {
		return rec, false
	}
	for h := int32(0); h < headers; h++ {
		for field := 0; field < 2; field++ { // key, value
			if v, p, ok = fastVarint32(b, p); !ok || (field == 0 && v < 0) {
				return rec, false
			}
			if v > 0 {
				if int64(v) > int64(len(b)-p) {
					return rec, false
				}
				p += int(v)
			}
		}
	}
	return rec, p == len(b)
}

// fastVarint32 decodes a zigzag int32 varint of at most 5 bytes at b[p:].
func fastVarint32(b []byte, p int) (int32, int, bool) {
	if p < len(b) && b[p] < 0x80 {
		ux := uint32(b[p])
		return int32(ux>>1) ^ -int32(ux&1), p + 1, true
	}
	ux, n := binary.Uvarint(b[p:])
	if n <= 0 || n > 5 {
		return 0, p, false
	}
	v := int64(ux>>1) ^ -int64(ux&1)
	if v != int64(int32(v)) {
		return 0, p, false
	}
	return int32(v), p + n, true
}

// parseRecordChecked is parseRecordSlice's exact path, check by check as
// parseRecordBody.
func parseRecordChecked(b []byte) (recordInfo, error) {
	var rec recordInfo
	if len(b) == 0 { // attributes
		return rec, errBodyShort
	}
	p := 1
	var err error
	if rec.TimestampDelta, p, err = bodyVarlong(b, p, 10); err != nil {
		return rec, err
	}
	if rec.OffsetDelta, p, err = bodyVarint(b, p); err != nil {
		return rec, err
	}
	var n int32
	if n, p, err = bodyVarint(b, p); err != nil { // key length
		return rec, err
	}
	rec.HasKey = n >= 0
	if p, err = bodySkip(b, p, n); err != nil {
		return rec, err
	}
	if n, p, err = bodyVarint(b, p); err != nil { // value length
		return rec, err
	}
	if p, err = bodySkip(b, p, n); err != nil {
		return rec, err
	}
	headers, p, err := bodyVarint(b, p)
	if err != nil {
		return rec, err
	}
	if headers < 0 {
		return rec, shapeErr("negative record header count")
	}
	for h := int32(0); h < headers; h++ {
		if n, p, err = bodyVarint(b, p); err != nil {
			return rec, err
		}
		if n < 0 {
			return rec, shapeErr("negative record header key length")
		}
		if p, err = bodySkip(b, p, n); err != nil {
			return rec, err
		}
		if n, p, err = bodyVarint(b, p); err != nil {
			return rec, err
		}
		if p, err = bodySkip(b, p, n); err != nil {
			return rec, err
		}
	}
	if p != len(b) {
		return rec, shapeErr("record length does not match its fields")
	}
	return rec, nil
}

// bodyVarlong is bodyReader.varlong over b[p:], returning the position
// after the varint.
func bodyVarlong(b []byte, p, maxBytes int) (int64, int, error) {
	if p < len(b) && b[p] < 0x80 { // one byte: most lengths and deltas
		ux := uint64(b[p])
		return int64(ux>>1) ^ -int64(ux&1), p + 1, nil
	}
	var ux uint64
	for i := 0; i < maxBytes; i++ {
		if p >= len(b) {
			return 0, p, errBodyShort
		}
		c := b[p]
		p++
		ux |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(ux>>1) ^ -int64(ux&1), p, nil
		}
	}
	return 0, p, errVarintTooLong
}

// bodyVarint is bodyReader.varint over b[p:].
func bodyVarint(b []byte, p int) (int32, int, error) {
	v, p, err := bodyVarlong(b, p, 5)
	if err != nil {
		return 0, p, err
	}
	if v != int64(int32(v)) {
		return 0, p, errVarintRange
	}
	return int32(v), p, nil
}

// bodySkip is bodyReader.skip over b[p:].
func bodySkip(b []byte, p int, n int32) (int, error) {
	if n <= 0 {
		return p, nil
	}
	if int64(n) > int64(len(b)-p) {
		return p, errFieldTooLong
	}
	return p + int(n), nil
}

// The structural errors of a record body, shared by both parsers.
var (
	errBodyShort     = shapeErr("record body shorter than its fields")
	errVarintTooLong = shapeErr("varint too long")
	errVarintRange   = shapeErr("varint out of int32 range")
	errFieldTooLong  = shapeErr("field length exceeds the record body")
)

// walkBatchRecords walks the records of a whole batch (header included),
// decompressing as needed. Decompression failures are wrapped in
// errDecompress.
func walkBatchRecords(batch []byte, h *batchHeader, fn func(i int32, r recordInfo) error) error {
	payload := batch[recordbatch.HeaderSize:]
	if h.codec() == compress.None {
		return walkRecords(&recordWindow{buf: payload}, h.RecordCount, fn)
	}
	rc, err := compress.NewReader(h.codec(), payload)
	if err != nil {
		return &errDecompress{err}
	}
	defer rc.Close()
	back := recordWindows.Get().(*[]byte)
	defer recordWindows.Put(back)
	w := recordWindow{buf: (*back)[:0], src: rc, back: back}
	return walkRecords(&w, h.RecordCount, fn)
}

// errDecompress marks a failure of the codec itself.
type errDecompress struct{ err error }

func (e *errDecompress) Error() string { return "decompression failed: " + e.err.Error() }
func (e *errDecompress) Unwrap() error { return e.err }
