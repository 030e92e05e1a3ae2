package storage

import (
	"bufio"
	"errors"
	"io"
	"sync"

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

// byteSource is what records are parsed from: a byte slice, or a buffered
// decompressor. Discard skips bytes without allocating.
type byteSource interface {
	io.ByteReader
	Discard(n int) (int, error)
}

// sliceSource is a byteSource over uncompressed records.
type sliceSource struct{ b []byte }

func (s *sliceSource) ReadByte() (byte, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c, nil
}

func (s *sliceSource) Discard(n int) (int, error) {
	if n > len(s.b) {
		m := len(s.b)
		s.b = nil
		return m, io.EOF
	}
	s.b = s.b[n:]
	return n, nil
}

// bodyReader parses one record body, refusing to read past its declared
// length.
type bodyReader struct {
	src  byteSource
	left int64
}

func (r *bodyReader) byte() (byte, error) {
	if r.left <= 0 {
		return 0, shapeErr("record body shorter than its fields")
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
	return 0, shapeErr("varint too long")
}

func (r *bodyReader) varint() (int32, error) {
	v, err := r.varlong(5)
	if err != nil {
		return 0, err
	}
	if v != int64(int32(v)) {
		return 0, shapeErr("varint out of int32 range")
	}
	return int32(v), nil
}

// skip discards n bytes of the body (n < 0 means a null field).
func (r *bodyReader) skip(n int32) error {
	if n <= 0 {
		return nil
	}
	if int64(n) > r.left {
		return shapeErr("field length exceeds the record body")
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
func readVarintFrom(src byteSource) (int32, error) {
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
func walkRecords(src byteSource, count int32, fn func(i int32, r recordInfo) error) error {
	for i := int32(0); i < count; i++ {
		length, err := readVarintFrom(src)
		if err != nil {
			return eofAsShape(err)
		}
		if length < 0 {
			return shapeErr("negative record length")
		}
		body := bodyReader{src: src, left: int64(length)}
		rec, err := parseRecordBody(&body)
		if err != nil {
			return eofAsShape(err)
		}
		if body.left != 0 {
			return shapeErr("record length does not match its fields")
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

var bufReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// walkBatchRecords walks the records of a whole batch (header included),
// decompressing as needed. Decompression failures are wrapped in
// errDecompress.
func walkBatchRecords(batch []byte, h *batchHeader, fn func(i int32, r recordInfo) error) error {
	payload := batch[batchHeaderSize:]
	if h.codec() == compress.None {
		return walkRecords(&sliceSource{payload}, h.RecordCount, fn)
	}
	rc, err := compress.NewReader(h.codec(), payload)
	if err != nil {
		return &errDecompress{err}
	}
	defer rc.Close()
	br := bufReaders.Get().(*bufio.Reader)
	br.Reset(&decompressErrReader{rc})
	defer func() { br.Reset(nil); bufReaders.Put(br) }()
	return walkRecords(br, h.RecordCount, fn)
}

// errDecompress marks a failure of the codec itself.
type errDecompress struct{ err error }

func (e *errDecompress) Error() string { return "decompression failed: " + e.err.Error() }
func (e *errDecompress) Unwrap() error { return e.err }

// decompressErrReader tags codec errors (other than EOF) as errDecompress.
type decompressErrReader struct{ r io.Reader }

func (d *decompressErrReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		return n, &errDecompress{err}
	}
	return n, err
}
