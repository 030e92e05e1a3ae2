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
// Compression streams too (NewWriter), for the cleaner's rewrites.
//
// What one decompression stream may allocate, whatever its output:
//
//	gzip    the inflater's fixed state (its 32 KiB window, tables)
//	snappy  one block: at most min(64 MiB, 22 x the block's bytes, the cap)
//	lz4     two buffers of min(the declared block size, the next block
//	        size >= 255 x the frame's bytes): 4 MiB at most (lz4.go)
//	zstd    the declared window plus two 128 KiB blocks, at the first
//	        block: at most 128 MiB (MaxZstdWindow) + 256 KiB, or under a
//	        cap max(cap, 8 MiB) + 256 KiB. The decoder (klauspost/compress)
//	        sizes its history by the frame header and has no option to grow
//	        it with the output (WithDecoderLowmem trims only block buffers;
//	        WithDecoderMaxWindow and WithDecoderMaxMemory only refuse), so
//	        this is the bound left; a pooled decoder keeps its history until
//	        the collector empties the pool.
//
// "The cap" is the caller's limit on decompressed bytes (NewLimitedReader,
// Decompress), strait.max.decompressed.batch.bytes for the broker.
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
// must Close it, once, to return pooled decoders; reading after Close is
// invalid. A pooled decoder costs no allocation.
func NewReader(c Codec, src []byte) (io.ReadCloser, error) { return NewLimitedReader(c, src, 0) }

// MinCappedZstdWindow is the largest zstd window always accepted under a
// cap on decompressed bytes: libzstd's levels up to 19 declare at most
// 8 MiB (window log 23), whatever the content's size.
const MinCappedZstdWindow = 8 << 20

// NewLimitedReader is NewReader for a payload whose decompressed form may
// not exceed limit bytes (limit <= 0: no limit). The caller still counts
// what it reads against the limit; what the limit changes is what a header
// may make a decoder reserve before any output exists: a zstd frame whose
// window is over max(limit, MinCappedZstdWindow) and a snappy block
// claiming more than limit are refused before their memory is allocated,
// since decoding either within the limit could not need it.
func NewLimitedReader(c Codec, src []byte, limit int64) (io.ReadCloser, error) {
	switch c {
	case None:
		return io.NopCloser(bytes.NewReader(src)), nil
	case Gzip:
		d, _ := gzipDecoders.Get().(*gzipDecoder)
		if d == nil {
			d = new(gzipDecoder)
		}
		d.src.Reset(src)
		var err error
		if d.zr == nil {
			d.zr, err = gzip.NewReader(&d.src)
		} else {
			err = d.zr.Reset(&d.src)
		}
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return d, nil
	case Snappy:
		return newSnappyReader(src, limit)
	case LZ4:
		d, _ := lz4Decoders.Get().(*lz4Decoder)
		if d == nil {
			d = new(lz4Decoder)
			d.zr = lz4.NewReader(nil)
		}
		d.src.lz4View(src)
		d.zr.Reset(&d.src)
		return d, nil
	case Zstd:
		d, _ := zstdDecoders.Get().(*zstdDecoder)
		if d == nil {
			zr, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(MaxZstdWindow))
			if err != nil {
				return nil, fmt.Errorf("zstd: %w", err)
			}
			d = &zstdDecoder{zr: zr, window: MaxZstdWindow}
		}
		d.src.Reset(src)
		window := uint64(MaxZstdWindow)
		if limit > 0 {
			window = uint64(min(MaxZstdWindow, max(limit, MinCappedZstdWindow)))
		}
		var err error
		if window == d.window {
			// The decoder has this window already: ResetWithOptions
			// would copy its options (two allocations per batch).
			err = d.zr.Reset(&d.src)
		} else {
			d.window = window
			err = d.zr.ResetWithOptions(&d.src, zstd.WithDecoderMaxWindow(window))
		}
		if err != nil {
			d.window = 0 // options possibly half applied: set them again next time
			d.src.Reset(nil)
			zstdDecoders.Put(d)
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return d, nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, c)
}

var (
	gzipDecoders   sync.Pool // *gzipDecoder
	lz4Decoders    sync.Pool // *lz4Decoder
	zstdDecoders   sync.Pool // *zstdDecoder
	snappyDecoders sync.Pool // *snappyReader
)

// gzipDecoder, lz4Decoder and zstdDecoder are pooled decoders with their
// input reader, so that a batch costs no allocation; Close returns them.
type gzipDecoder struct {
	zr  *gzip.Reader
	src bytes.Reader
}

func (d *gzipDecoder) Read(p []byte) (int, error) { return d.zr.Read(p) }

func (d *gzipDecoder) Close() error {
	d.src.Reset(nil)
	gzipDecoders.Put(d)
	return nil
}

type lz4Decoder struct {
	zr  *lz4.Reader
	src sliceReader // src with block sizes lowered (lz4.go)
}

func (d *lz4Decoder) Read(p []byte) (int, error) { return d.zr.Read(p) }

func (d *lz4Decoder) Close() error {
	d.zr.Reset(nil)
	d.src.reset()
	lz4Decoders.Put(d)
	return nil
}

type zstdDecoder struct {
	zr     *zstd.Decoder
	src    bytes.Reader
	window uint64 // the decoder's maximum window, 0 when unknown
}

func (d *zstdDecoder) Read(p []byte) (int, error) { return d.zr.Read(p) }

func (d *zstdDecoder) Close() error {
	_ = d.zr.Reset(nil)
	d.src.Reset(nil)
	zstdDecoders.Put(d)
	return nil
}

// snappyReader decodes xerial-framed or raw snappy one block at a time
// into a buffer kept across blocks and, when pooled, across batches.
type snappyReader struct {
	src    []byte // remaining framed input (xerial) or nil after the raw block
	xerial bool
	limit  int64  // > 0: a block claiming more is refused
	block  []byte // decoded bytes not yet returned
	buf    []byte // backing store of block
}

// maxPooledSnappyBuffer is the largest block buffer a pooled snappy reader
// keeps; a larger one (a big raw block) is left to the collector.
const maxPooledSnappyBuffer = 1 << 20

func newSnappyReader(src []byte, limit int64) (*snappyReader, error) {
	r, _ := snappyDecoders.Get().(*snappyReader)
	if r == nil {
		r = new(snappyReader)
	}
	r.limit = limit
	if len(src) >= xerialHeaderSize && bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		r.src, r.xerial = src[xerialHeaderSize:], true
		return r, nil
	}
	if err := r.decodeBlock(src); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// decodeBlock decodes one snappy block into r.buf and makes it r.block.
// The block's header claims its decoded length, and the decoder allocates
// that much: a claim over MaxSnappyBlock, or over what the block's bytes
// can expand to, is refused first, so a small forged block cannot make the
// broker allocate more than snappyMaxExpansion times its own size.
func (r *snappyReader) decodeBlock(b []byte) error {
	n, err := snappy.DecodedLen(b)
	if err != nil {
		return fmt.Errorf("snappy: %w", err)
	}
	if n > MaxSnappyBlock {
		return fmt.Errorf("snappy: block decodes to %d bytes, over the %d limit", n, MaxSnappyBlock)
	}
	if r.limit > 0 && int64(n) > r.limit {
		return fmt.Errorf("snappy: block decodes to %d bytes, over the %d limit", n, r.limit)
	}
	if n > len(b)*snappyMaxExpansion {
		return fmt.Errorf("snappy: block of %d bytes claims %d decoded bytes, more than it can hold", len(b), n)
	}
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	out, err := snappy.Decode(r.buf[:n], b)
	if err != nil {
		return fmt.Errorf("snappy: %w", err)
	}
	r.block = out
	return nil
}

// snappyMaxExpansion bounds what one byte of a valid snappy block can
// decode to: the densest element, a 3-byte copy, emits at most 64 bytes.
const snappyMaxExpansion = 22

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
		if err := r.decodeBlock(r.src[:n]); err != nil {
			return 0, err
		}
		r.src = r.src[n:]
	}
	n := copy(p, r.block)
	r.block = r.block[n:]
	return n, nil
}

func (r *snappyReader) Close() error {
	r.src, r.block, r.xerial, r.limit = nil, nil, false, 0
	if cap(r.buf) > maxPooledSnappyBuffer {
		r.buf = nil
	}
	snappyDecoders.Put(r)
	return nil
}

// Decompress returns the whole decompressed form of src, failing if it
// would exceed limit bytes.
func Decompress(c Codec, src []byte, limit int64) ([]byte, error) {
	r, err := NewLimitedReader(c, src, limit)
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

// Limited is Decompress with limit as a function of the codec id, the form
// recordbatch.Read takes.
func Limited(limit int64) func(codec int8, src []byte) ([]byte, error) {
	return func(codec int8, src []byte) ([]byte, error) { return Decompress(Codec(codec), src, limit) }
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

// NewWriter returns a writer compressing what it is given into dst, in the
// frame format Compress writes, holding no more than one codec block of
// input at a time: the cleaner streams retained records through it. Close
// ends the stream (it does not close dst) and returns pooled encoders; the
// writer must not be used after.
func NewWriter(c Codec, dst io.Writer) (io.WriteCloser, error) {
	return newWriter(c, dst, writerOpts{})
}

// The default levels of Kafka's compression.<codec>.level (KIP-390).
const (
	DefaultGzipLevel = -1
	DefaultLZ4Level  = 9
	DefaultZstdLevel = 3
)

// NewLevelWriter is NewWriter at a compression level as Kafka's
// compression.<codec>.level gives it (KIP-390), for the broker's
// recompression of produced batches: gzip -1 (the default, 6) or 1-9; lz4
// 9 (the default: LZ4's fast compressor, as Kafka keeps for its default
// level) or 1-8 and 10-17 (its high-compression levels; this LZ4
// implementation has them up to 9, so 10-17 compress as 9); zstd any zstd
// level, compressed at the nearest of
// the four levels the Go encoder has (below 3 fastest, 3-5 default, 6-9
// better, 10 and up best). Snappy and none have no level. Encoders are
// pooled per codec and level.
func NewLevelWriter(c Codec, level int, dst io.Writer) (io.WriteCloser, error) {
	o := writerOpts{leveled: true, level: level}
	switch c {
	case Gzip:
		if level != DefaultGzipLevel && (level < 1 || level > 9) {
			return nil, fmt.Errorf("gzip: invalid level %d", level)
		}
	case LZ4:
		if level < 1 || level > 17 {
			return nil, fmt.Errorf("lz4: invalid level %d", level)
		}
		o.level = level
	case Zstd:
		o.level = int(zstd.EncoderLevelFromZstd(level))
	default:
		return newWriter(c, dst, writerOpts{})
	}
	return newWriter(c, dst, o)
}

// writerOpts select an encoder: leveled ones (NewLevelWriter) are kept in
// pools of their own per codec and level; level is the encoder's own
// (gzip's, lz4's 1-9, or a zstd.EncoderLevel).
type writerOpts struct {
	leveled bool
	level   int
}

type poolKey struct {
	c     Codec
	level int
}

// leveledEncoders holds a *sync.Pool per poolKey.
var leveledEncoders sync.Map

func (o writerOpts) pool(c Codec, def *sync.Pool) *sync.Pool {
	if !o.leveled {
		return def
	}
	p, ok := leveledEncoders.Load(poolKey{c, o.level})
	if !ok {
		p, _ = leveledEncoders.LoadOrStore(poolKey{c, o.level}, new(sync.Pool))
	}
	return p.(*sync.Pool)
}

func newWriter(c Codec, dst io.Writer, o writerOpts) (io.WriteCloser, error) {
	switch c {
	case None:
		return nopWriteCloser{dst}, nil
	case Gzip:
		pool := o.pool(c, &gzipEncoders)
		e, _ := pool.Get().(*gzipEncoder)
		if e == nil {
			level := gzip.DefaultCompression
			if o.leveled {
				level = o.level
			}
			zw, err := gzip.NewWriterLevel(dst, level)
			if err != nil {
				return nil, fmt.Errorf("gzip: %w", err)
			}
			e = &gzipEncoder{zw: zw, pool: pool}
		} else {
			e.zw.Reset(dst)
		}
		return e, nil
	case Snappy:
		w := &snappyWriter{dst: dst}
		hdr := append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1) // version 1, compatible 1
		if _, err := dst.Write(hdr); err != nil {
			return nil, err
		}
		return w, nil
	case LZ4:
		pool := o.pool(c, &lz4Encoders)
		e, _ := pool.Get().(*lz4Encoder)
		if e == nil {
			e = &lz4Encoder{zw: lz4.NewWriter(dst), pool: pool}
			// 64 KiB blocks, as Kafka's Java producer writes them, keep the
			// encoder's buffers small.
			opts := []lz4.Option{lz4.BlockSizeOption(lz4.Block64Kb)}
			if o.leveled {
				opts = append(opts, lz4.CompressionLevelOption(lz4Level(o.level)))
			}
			if err := e.zw.Apply(opts...); err != nil {
				return nil, fmt.Errorf("lz4: %w", err)
			}
		} else {
			e.zw.Reset(dst)
		}
		return e, nil
	case Zstd:
		pool := o.pool(c, &zstdEncoders)
		e, _ := pool.Get().(*zstdStreamEncoder)
		if e == nil {
			opts := []zstd.EOption{zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(zstdStreamWindow),
				zstd.WithLowerEncoderMem(true)}
			if o.leveled {
				opts = append(opts, zstd.WithEncoderLevel(zstd.EncoderLevel(o.level)))
			}
			zw, err := zstd.NewWriter(dst, opts...)
			if err != nil {
				return nil, fmt.Errorf("zstd: %w", err)
			}
			e = &zstdStreamEncoder{zw: zw, pool: pool}
		} else {
			e.zw.Reset(dst)
		}
		return e, nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, c)
}

// lz4Level maps Kafka's lz4 levels onto the Go encoder's: the default
// level is LZ4's fast compressor, as in Kafka's Lz4BlockOutputStream; the
// others its high-compression levels, 9 the highest this one has.
func lz4Level(level int) lz4.CompressionLevel {
	if level == DefaultLZ4Level {
		return lz4.Fast
	}
	return lz4.Level1 << (min(level, 9) - 1)
}

// zstdStreamWindow is the window of the frames NewWriter writes: what a
// reader of them must reserve, and about what the encoder holds.
const zstdStreamWindow = 1 << 20

var (
	gzipEncoders sync.Pool // *gzipEncoder
	lz4Encoders  sync.Pool // *lz4Encoder
	zstdEncoders sync.Pool // *zstdStreamEncoder
)

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

type gzipEncoder struct {
	zw   *gzip.Writer
	pool *sync.Pool
}

func (e *gzipEncoder) Write(p []byte) (int, error) { return e.zw.Write(p) }

func (e *gzipEncoder) Close() error {
	err := e.zw.Close()
	e.zw.Reset(io.Discard)
	e.pool.Put(e)
	return err
}

type lz4Encoder struct {
	zw   *lz4.Writer
	pool *sync.Pool
}

func (e *lz4Encoder) Write(p []byte) (int, error) { return e.zw.Write(p) }

func (e *lz4Encoder) Close() error {
	err := e.zw.Close()
	e.zw.Reset(io.Discard)
	e.pool.Put(e)
	return err
}

type zstdStreamEncoder struct {
	zw   *zstd.Encoder
	pool *sync.Pool
}

func (e *zstdStreamEncoder) Write(p []byte) (int, error) { return e.zw.Write(p) }

func (e *zstdStreamEncoder) Close() error {
	err := e.zw.Close()
	e.zw.Reset(io.Discard)
	e.pool.Put(e)
	return err
}

// snappyWriter writes xerial framing: 32 KiB blocks, each encoded alone.
type snappyWriter struct {
	dst  io.Writer
	buf  []byte // input not yet encoded, under one block
	enc  []byte
	lenb [4]byte
}

func (w *snappyWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if w.buf == nil {
			w.buf = make([]byte, 0, xerialBlockSize)
		}
		k := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf, p = w.buf[:len(w.buf)+k], p[k:]
		if len(w.buf) == cap(w.buf) {
			if err := w.block(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (w *snappyWriter) block() error {
	if len(w.buf) == 0 {
		return nil
	}
	w.enc = snappy.Encode(w.enc[:cap(w.enc)], w.buf)
	w.buf = w.buf[:0]
	binary.BigEndian.PutUint32(w.lenb[:], uint32(len(w.enc)))
	if _, err := w.dst.Write(w.lenb[:]); err != nil {
		return err
	}
	_, err := w.dst.Write(w.enc)
	return err
}

func (w *snappyWriter) Close() error { return w.block() }
