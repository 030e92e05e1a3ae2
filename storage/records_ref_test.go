package storage

// The record walker as it was before the windowed fast path
// (records.go), kept as the reference the differential tests compare
// the new one with: same callbacks, same errors, for any input.

import (
	"bufio"
	"errors"
	"io"
	"sync"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// refByteSource is what the reference parser reads from.
type refByteSource interface {
	io.ByteReader
	Discard(n int) (int, error)
}

// refSliceSource is a refByteSource over uncompressed records.
type refSliceSource struct{ b []byte }

func (s *refSliceSource) ReadByte() (byte, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c, nil
}

func (s *refSliceSource) Discard(n int) (int, error) {
	if n > len(s.b) {
		m := len(s.b)
		s.b = nil
		return m, io.EOF
	}
	s.b = s.b[n:]
	return n, nil
}

// refBodyReader parses one record body, refusing to read past its declared
// length.
type refBodyReader struct {
	src  refByteSource
	left int64
}

func (r *refBodyReader) byte() (byte, error) {
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
func (r *refBodyReader) varlong(maxBytes int) (int64, error) {
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

func (r *refBodyReader) varint() (int32, error) {
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
func (r *refBodyReader) skip(n int32) error {
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

// refReadVarintFrom reads a zigzag int32 varint straight from src (the
// record length prefix, before the body budget is known).
func refReadVarintFrom(src refByteSource) (int32, error) {
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

// refWalkRecords parses count records from src, calling fn for each, and
// checks that nothing follows the last one. Structural problems and
// premature ends are errRecordShape; decompression failures are returned
// as they come.
func refWalkRecords(src refByteSource, count int32, fn func(i int32, r recordInfo) error) error {
	for i := int32(0); i < count; i++ {
		length, err := refReadVarintFrom(src)
		if err != nil {
			return refEOFAsShape(err)
		}
		if length < 0 {
			return shapeErr("negative record length")
		}
		body := refBodyReader{src: src, left: int64(length)}
		rec, err := refParseRecordBody(&body)
		if err != nil {
			return refEOFAsShape(err)
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

func refEOFAsShape(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return shapeErr("batch ends inside a record")
	}
	return err
}

func refParseRecordBody(r *refBodyReader) (recordInfo, error) {
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

var refBufReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// refWalkBatchRecords walks the records of a whole batch (header included),
// decompressing as needed. Decompression failures are wrapped in
// errDecompress.
func refWalkBatchRecords(batch []byte, h *batchHeader, fn func(i int32, r recordInfo) error) error {
	payload := batch[recordbatch.HeaderSize:]
	if h.codec() == compress.None {
		return refWalkRecords(&refSliceSource{payload}, h.RecordCount, fn)
	}
	rc, err := compress.NewReader(h.codec(), payload)
	if err != nil {
		return &errDecompress{err}
	}
	defer rc.Close()
	br := refBufReaders.Get().(*bufio.Reader)
	br.Reset(&decompressErrReader{rc})
	defer func() { br.Reset(nil); refBufReaders.Put(br) }()
	return refWalkRecords(br, h.RecordCount, fn)
}

// decompressErrReader tags codec errors (other than EOF) as errDecompress.
type decompressErrReader struct{ r io.Reader }

func (d *decompressErrReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		return n, &errDecompress{err}
	}
	return n, err
}

func shapeErr(msg string) error { return &errRecordShape{Msg: msg} }
