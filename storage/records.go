package storage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// The records of a batch (their layout: see recordbatch) are walked here
// for validation and timestamp searches, decompressing as they go:
// recordbatch.ScanRecord parses a record held whole in memory, and
// parseRecordBody one that streams from the decompressor.

// recordInfo is what validation and timestamp searches need of a record.
type recordInfo = recordbatch.RecordInfo

// errRecordShape reports a structural error in a record; walkRecords turns
// it into INVALID_RECORD.
type errRecordShape = recordbatch.FormatError

// recordWindow is the source of a batch's records section: the section
// itself for an uncompressed batch (src nil), or a pooled window refilled
// from the decompressor. A record that lies whole in the window is parsed
// from the slice (recordbatch.ScanRecord); one that does not (larger than the
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
// length. When tee is set, every byte read is written to it as well (the
// cleaner copies a retained record's key, value and headers that way).
type bodyReader struct {
	src  *recordWindow
	left int64
	tee  *bufio.Writer
}

func (r *bodyReader) byte() (byte, error) {
	if r.left <= 0 {
		return 0, recordbatch.ErrBodyShort
	}
	c, err := r.src.ReadByte()
	if err != nil {
		return 0, err
	}
	r.left--
	if r.tee != nil {
		_ = r.tee.WriteByte(c) // a write error stays in the bufio.Writer for Flush
	}
	return c, nil
}

// copyN consumes n bytes of the body a window at a time, writing them to
// dst (and the tee) when set: a field of any size streams through.
func (r *bodyReader) copyN(n int64, dst io.Writer) error {
	if n > r.left {
		return recordbatch.ErrFieldTooLong
	}
	for n > 0 {
		if r.src.avail() == 0 {
			r.src.fill(int(min(n, recordWindowSize)))
			if r.src.avail() == 0 {
				if r.src.err != nil {
					return r.src.err
				}
				return io.EOF
			}
		}
		k := int(min(n, int64(r.src.avail())))
		chunk := r.src.buf[r.src.pos : r.src.pos+k]
		if dst != nil {
			_, _ = dst.Write(chunk) // hashes never fail; see byte for the tee
		}
		if r.tee != nil {
			_, _ = r.tee.Write(chunk)
		}
		r.src.pos += k
		r.left -= int64(k)
		n -= int64(k)
	}
	return nil
}

// varlong reads a zigzag varint of at most maxBytes bytes, a byte at a
// time (the slice form is recordbatch.Varlong).
func (r *bodyReader) varlong(maxBytes int) (int64, error) {
	var ux uint64
	for i := 0; i < maxBytes; i++ {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		ux |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return recordbatch.Unzigzag(ux), nil
		}
	}
	return 0, recordbatch.ErrVarintTooLong
}

func (r *bodyReader) varint() (int32, error) {
	v, err := r.varlong(5)
	if err != nil {
		return 0, err
	}
	if v != int64(int32(v)) {
		return 0, recordbatch.ErrVarintRange
	}
	return int32(v), nil
}

// skip discards n bytes of the body (n < 0 means a null field).
func (r *bodyReader) skip(n int32) error {
	if n <= 0 {
		return nil
	}
	if int64(n) > r.left {
		return recordbatch.ErrFieldTooLong
	}
	if r.tee != nil {
		return r.copyN(int64(n), nil)
	}
	got, err := r.src.Discard(int(n))
	r.left -= int64(got)
	if err != nil {
		return err
	}
	return nil
}

// walkRecords parses count records from src, calling fn for each, and
// checks that nothing follows the last one. Structural problems and
// premature ends are errRecordShape; decompression failures are returned
// as they come.
func walkRecords(src *recordWindow, count int32, fn func(i int32, r recordInfo) error) error {
	for i := int32(0); i < count; i++ {
		src.fill(maxRecordLengthPrefix)
		length, n := recordbatch.Varint32(src.buf[src.pos:])
		switch {
		case n == recordbatch.VarintShort:
			// The prefix is not all buffered: byte at a time, which
			// reports the end or the codec error where it comes.
			prefix := bodyReader{src: src, left: maxRecordLengthPrefix}
			var err error
			if length, err = prefix.varint(); err != nil {
				return eofAsShape(err)
			}
		case n < 0:
			return varintErr(n)
		default:
			src.pos += n
		}
		if length < 0 {
			return recordbatch.ErrNegativeLength
		}
		if int(length) > src.avail() && int(length) <= recordWindowSize {
			src.fill(int(length))
		}
		var rec recordInfo
		if int(length) <= src.avail() {
			var err error
			if rec, err = recordbatch.ScanRecord(src.buf[src.pos : src.pos+int(length)]); err != nil {
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
				return recordbatch.ErrRecordLength
			}
		}
		if fn != nil {
			if err := fn(i, rec); err != nil {
				return err
			}
		}
	}
	if _, err := src.ReadByte(); err == nil {
		return recordbatch.ErrRecordsRemaining
	} else if err != io.EOF {
		return err
	}
	return nil
}

// maxRecordLengthPrefix is the longest record length prefix (a varint).
const maxRecordLengthPrefix = 5

// varintErr is the error of a recordbatch.Varint32 result n < 0.
func varintErr(n int) error {
	if n == recordbatch.VarintTooLong {
		return recordbatch.ErrVarintTooLong
	}
	return recordbatch.ErrVarintRange
}

func eofAsShape(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return recordbatch.ErrBatchEndsInRecord
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
		return rec, recordbatch.ErrHeaderCount
	}
	for h := int32(0); h < headers; h++ {
		kl, err := r.varint()
		if err != nil {
			return rec, err
		}
		if kl < 0 {
			return rec, recordbatch.ErrHeaderKeyLength
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

// walkBatchRecords walks the records of a whole batch (header included),
// decompressing as needed. Decompression failures are wrapped in
// errDecompress.
func walkBatchRecords(batch []byte, h *batchHeader, fn func(i int32, r recordInfo) error) error {
	return walkBatchRecordsCapped(batch, h, 0, fn)
}

// walkBatchRecordsCapped is walkBatchRecords failing (errDecompress) once
// the decompressed records pass limit bytes; limit <= 0 means no cap.
// Records are decoded as they stream, so nothing past the cap is read.
func walkBatchRecordsCapped(batch []byte, h *batchHeader, limit int64, fn func(i int32, r recordInfo) error) error {
	payload := batch[recordbatch.HeaderSize:]
	if h.codec() == compress.None {
		return walkRecords(&recordWindow{buf: payload}, h.RecordCount, fn)
	}
	rc, err := compress.NewLimitedReader(h.codec(), payload, limit)
	if err != nil {
		return &errDecompress{err}
	}
	defer rc.Close()
	var src io.Reader = rc
	if limit > 0 {
		src = &cappedReader{r: rc, left: limit, limit: limit}
	}
	back := recordWindows.Get().(*[]byte)
	defer recordWindows.Put(back)
	w := recordWindow{buf: (*back)[:0], src: src, back: back}
	return walkRecords(&w, h.RecordCount, fn)
}

// errDecompress marks a failure of the codec itself.
type errDecompress struct{ err error }

func (e *errDecompress) Error() string { return "decompression failed: " + e.err.Error() }
func (e *errDecompress) Unwrap() error { return e.err }

// errDecompressedTooLarge is the failure of a batch whose records expand
// past LogConfig.MaxDecompressedBatchBytes.
var errDecompressedTooLarge = errors.New("decompressed records over the limit")

// cappedReader reads r until limit bytes, then fails rather than reading on.
type cappedReader struct {
	r           io.Reader
	left, limit int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells a batch of exactly limit bytes from a larger one.
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w of %d bytes", errDecompressedTooLarge, c.limit)
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
