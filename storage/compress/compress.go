// Package compress owns the record-batch compression codecs of Kafka's
// magic v2 format: the codec id lives in bits 0-2 of a batch's attributes
// and covers the records section (everything after the 61-byte header).
//
//	0 none, 1 gzip, 2 snappy, 3 lz4 (LZ4 frame format), 4 zstd
//
// Snappy is read in both shapes Kafka clients write: the xerial framing the
// Java client uses (16-byte header "\x82SNAPPY\x00" + version i32 +
// compatible-version i32, then blocks of [length i32][snappy block]) and a
// single raw snappy block (librdkafka, franz-go older versions). Snappy is
// written with xerial framing, the shape every client reads.
//
// Decompression is streaming (NewReader) so that validating a batch never
// holds its whole uncompressed payload in memory; decoders are pooled.
package compress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a compression codec id as stored in batch attributes bits 0-2.
type Codec int8

// The codecs Kafka defines.
const (
	None   Codec = 0
	Gzip   Codec = 1
	Snappy Codec = 2
	LZ4    Codec = 3
	Zstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", int8(c))
}

// Valid reports whether c is one of the codecs Kafka defines.
func (c Codec) Valid() bool { return c >= None && c <= Zstd }

// MaxSnappyBlock caps the decoded size of one snappy block. A snappy block
// is decoded whole, so without a cap a small forged block could claim a
// multi-gigabyte output; producers write blocks of 32 KiB (xerial) or one
// block per batch (raw), far below this.
const MaxSnappyBlock = 64 << 20

// MaxZstdWindow caps the window a zstd frame may declare, as libzstd's
// default ZSTD_WINDOWLOG_LIMIT_DEFAULT (2^27) does for Kafka's Java broker;
// a forged frame cannot make a decoder reserve more.
const MaxZstdWindow = 1 << 27

// ErrUnknownCodec is returned for codec ids outside 0-4.
var ErrUnknownCodec = errors.New("unknown compression codec")

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	xerialBlockSize  = 32 << 10
)

// NewReader returns a reader of the decompressed form of src. The caller
// must Close it to return pooled decoders; reading after Close is invalid.
func NewReader(c Codec, src []byte) (io.ReadCloser, error) {
	switch c {
	case None:
		return io.NopCloser(bytes.NewReader(src)), nil
	case Gzip:
		gz, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if gz == nil {
			gz, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = gz.Reset(bytes.NewReader(src))
		}
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return &pooledReader{Reader: gz, release: func() { gzipReaders.Put(gz) }}, nil
	case Snappy:
		return newSnappyReader(src)
	case LZ4:
		lr, _ := lz4Readers.Get().(*lz4.Reader)
		if lr == nil {
			lr = lz4.NewReader(bytes.NewReader(src))
		} else {
			lr.Reset(bytes.NewReader(src))
		}
		return &pooledReader{Reader: lr, release: func() { lr.Reset(nil); lz4Readers.Put(lr) }}, nil
	case Zstd:
		zr, _ := zstdReaders.Get().(*zstd.Decoder)
		if zr == nil {
			var err error
			zr, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(MaxZstdWindow))
			if err != nil {
				return nil, fmt.Errorf("zstd: %w", err)
			}
		}
		if err := zr.Reset(bytes.NewReader(src)); err != nil {
			zstdReaders.Put(zr)
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return &pooledReader{Reader: zr, release: func() { _ = zr.Reset(nil); zstdReaders.Put(zr) }}, nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, c)
}

var (
	gzipReaders sync.Pool
	lz4Readers  sync.Pool
	zstdReaders sync.Pool
)

type pooledReader struct {
	io.Reader
	release func()
}

func (p *pooledReader) Close() error {
	if p.release != nil {
		p.release()
		p.release = nil
		p.Reader = eofReader{}
	}
	return nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// snappyReader decodes xerial-framed or raw snappy one block at a time.
type snappyReader struct {
	src    []byte // remaining framed input (xerial) or nil after the raw block
	xerial bool
	block  []byte // decoded bytes not yet returned
}

func newSnappyReader(src []byte) (*snappyReader, error) {
	if len(src) >= xerialHeaderSize && bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		return &snappyReader{src: src[xerialHeaderSize:], xerial: true}, nil
	}
	block, err := decodeSnappyBlock(src)
	if err != nil {
		return nil, err
	}
	return &snappyReader{block: block}, nil
}

func decodeSnappyBlock(b []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(b)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	if n > MaxSnappyBlock {
		return nil, fmt.Errorf("snappy: block decodes to %d bytes, over the %d limit", n, MaxSnappyBlock)
	}
	out, err := snappy.Decode(make([]byte, n), b)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	return out, nil
}

func (r *snappyReader) Read(p []byte) (int, error) {
	for len(r.block) == 0 {
		if !r.xerial || len(r.src) == 0 {
			return 0, io.EOF
		}
		if len(r.src) < 4 {
			return 0, errors.New("snappy: truncated xerial block length")
		}
		n := binary.BigEndian.Uint32(r.src)
		r.src = r.src[4:]
		if uint64(n) > uint64(len(r.src)) {
			return 0, fmt.Errorf("snappy: xerial block of %d bytes with %d remaining", n, len(r.src))
		}
		block, err := decodeSnappyBlock(r.src[:n])
		if err != nil {
			return 0, err
		}
		r.src = r.src[n:]
		r.block = block
	}
	n := copy(p, r.block)
	r.block = r.block[n:]
	return n, nil
}

func (r *snappyReader) Close() error { r.src, r.block = nil, nil; return nil }

// Decompress returns the whole decompressed form of src, failing if it
// would exceed limit bytes.
func Decompress(c Codec, src []byte, limit int64) ([]byte, error) {
	r, err := NewReader(c, src)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out bytes.Buffer
	n, err := out.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%s: decompressed size over the %d limit", c, limit)
	}
	return out.Bytes(), nil
}

// Compress appends the compressed form of src to dst.
func Compress(c Codec, dst, src []byte) ([]byte, error) {
	switch c {
	case None:
		return append(dst, src...), nil
	case Gzip:
		buf := bytes.NewBuffer(dst)
		w := gzip.NewWriter(buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case Snappy:
		dst = append(dst, xerialMagic...)
		dst = binary.BigEndian.AppendUint32(dst, 1) // version
		dst = binary.BigEndian.AppendUint32(dst, 1) // minimum compatible version
		for len(src) > 0 {
			chunk := src[:min(len(src), xerialBlockSize)]
			src = src[len(chunk):]
			enc := snappy.Encode(nil, chunk)
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(enc)))
			dst = append(dst, enc...)
		}
		return dst, nil
	case LZ4:
		buf := bytes.NewBuffer(dst)
		w := lz4.NewWriter(buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case Zstd:
		zstdEncoderOnce.Do(func() {
			zstdEncoder, zstdEncoderErr = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		})
		if zstdEncoderErr != nil {
			return nil, zstdEncoderErr
		}
		return zstdEncoder.EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, c)
}

// zstd.Encoder.EncodeAll is safe for concurrent use, so one encoder serves
// the process.
var (
	zstdEncoderOnce sync.Once
	zstdEncoder     *zstd.Encoder
	zstdEncoderErr  error
)
