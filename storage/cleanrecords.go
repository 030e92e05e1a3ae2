package storage

import (
	"bufio"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// The cleaner's record-level work: streaming a batch's records with their
// keys, and writing a batch back with only the records it keeps, as
// Kafka's MemoryRecords.filterTo and MemoryRecordsBuilder do, but never
// holding a batch's decompressed records: Kafka's filterTo decompresses a
// whole batch, so one batch of a few KiB holding two 900 MiB values (zeros
// compress well) costs its cleaner gigabytes, and the OutOfMemoryError
// kills the cleaner thread. Here records stream from the decompressor
// through a 64 KiB window (recordWindow), keys are hashed as they stream,
// values are skipped or copied a window at a time into the compressor of
// the rewritten batch, which writes into the new segment as it goes.

// cleanRecord is what the cleaner decides on about one record: its key is
// known by its MD5 digest only (the offset map's key).
type cleanRecord struct {
	index     int32 // in its batch
	offset    int64
	timestamp int64 // the record's timestamp as Kafka's Record.timestamp() reads it
	hasKey    bool
	hasValue  bool // false for a tombstone
	// keyHash is the key's digest when hashed; a record whose head (from
	// its attributes to its value length) is larger than the window is
	// decided on before its key is read when it is being copied (see walk).
	keyHash  [offsetMapHashSize]byte
	hashed   bool
	bigHead  bool
	tsDelta  int64
	offDelta int32
}

// deleteHorizon returns the batch's delete horizon (KIP-534): when
// attributes bit 6 is set, baseTimestamp holds the time from which its
// tombstones may be removed.
func (h *batchHeader) deleteHorizon() (int64, bool) {
	if h.Attributes&recordbatch.AttrDeleteHorizon != 0 {
		return h.BaseTimestamp, true
	}
	return recordbatch.NoTimestamp, false
}

// errNegativeOffsetDelta refuses a record before its batch's base offset.
var errNegativeOffsetDelta = errors.New("negative record offset delta")

// recordStream walks the records of one batch at a time; a cleaner worker
// keeps one, so its digest is reused.
type recordStream struct {
	digest hash.Hash
	pfx    []byte      // a rewritten record's new head
	rec    cleanRecord // the record decide is given (kept here: no allocation per record)
	// renumber makes each record's offset delta its position in the batch
	// (the produce path's rebuild, rebuild.go); the cleaner keeps them.
	renumber bool
}

// walk parses the records of batch (header h) one at a time, decompressing
// as it goes and failing (errDecompressedTooLarge) past limit decompressed
// bytes when limit > 0, and calls decide for each. Record lengths are
// checked against the bytes left (uncompressed) or the cap left before
// anything is read by them, and nothing is ever allocated by them.
//
// With out nil, each key is hashed before decide is called and decide's
// answer is not used. With out set, each record decide keeps is written to
// out as a Kafka builder would write it into the rebuilt batch: attributes
// 0, timestamp delta rebased on baseTs, offset delta, then its key, value
// and headers as they are; a record whose head does not fit the window is
// then decided on before its key is read (hashed false, bigHead true), so
// the caller must know the answer from an earlier walk without out.
//
// An error decide returns ends the walk and is returned as it is.
func (s *recordStream) walk(batch []byte, h *batchHeader, limit int64, out *bufio.Writer, baseTs int64,
	decide func(r *cleanRecord) (bool, error)) error {
	payload := batch[recordbatch.HeaderSize:]
	var win recordWindow
	var capped *cappedReader
	if h.codec() == compress.None {
		win = recordWindow{buf: payload}
	} else {
		rc, err := compress.NewLimitedReader(h.codec(), payload, limit)
		if err != nil {
			return &errDecompress{err}
		}
		defer rc.Close()
		var src io.Reader = rc
		if limit > 0 {
			capped = &cappedReader{r: rc, left: limit, limit: limit}
			src = capped
		}
		back := recordWindows.Get().(*[]byte)
		defer recordWindows.Put(back)
		win = recordWindow{buf: (*back)[:0], src: src, back: back}
	}
	if s.digest == nil {
		s.digest = md5.New()
	}
	logAppend := h.timestampType() == LogAppendTime
	for i := int32(0); i < h.RecordCount; i++ {
		prefix := bodyReader{src: &win, left: maxRecordLengthPrefix}
		length, err := prefix.varint()
		if err != nil {
			return fmt.Errorf("record %d: %w", i, eofAsShape(err))
		}
		if length < 0 {
			return fmt.Errorf("record %d: %w", i, recordbatch.ErrNegativeLength)
		}
		switch {
		case win.src == nil && int(length) > win.avail():
			return fmt.Errorf("record %d: length %d with %d bytes left: %w", i, length, win.avail(), recordbatch.ErrBatchEndsInRecord)
		case capped != nil && int64(length) > capped.left+int64(win.avail()):
			return &errDecompress{fmt.Errorf("record %d of %d bytes: %w of %d bytes", i, length, errDecompressedTooLarge, limit)}
		}
		win.fill(int(min(length, recordWindowSize)))
		body := bodyReader{src: &win, left: int64(length)}
		r := &s.rec
		*r = cleanRecord{index: i}
		// The head as a slice, when the window holds it: most records. The
		// slice is cut at the window's size, not at what the window happens
		// to hold, so that every walk over a batch sees the same heads as big.
		head := win.buf[win.pos : win.pos+min(int(length), recordWindowSize, win.avail())]
		key, valueLen, pfxLen, headLen, ok := scanRecordHead(head, r)
		if !ok {
			// Read the head a byte at a time up to the key.
			r.bigHead = true
			if _, err := body.byte(); err != nil { // attributes
				return fmt.Errorf("record %d: %w", i, eofAsShape(err))
			}
			if r.tsDelta, err = body.varlong(10); err == nil {
				r.offDelta, err = body.varint()
			}
			if err != nil {
				return fmt.Errorf("record %d: %w", i, eofAsShape(err))
			}
			pfxLen = int(int64(length) - body.left)
		}
		if s.renumber {
			r.offDelta = i
		}
		if r.offDelta < 0 {
			return fmt.Errorf("record %d: %w", i, errNegativeOffsetDelta)
		}
		r.offset = h.BaseOffset + int64(r.offDelta)
		r.timestamp = h.BaseTimestamp + r.tsDelta
		if logAppend {
			r.timestamp = h.MaxTimestamp
		}
		switch {
		case ok:
			r.hasKey, r.hasValue, r.hashed = key != nil, valueLen >= 0, true
			if key != nil {
				r.keyHash = md5.Sum(key)
			}
		case out == nil:
			// Hash the key as it streams.
			keyLen, err := body.varint()
			if err == nil && keyLen >= 0 {
				s.digest.Reset()
				err = body.copyN(int64(keyLen), s.digest)
				s.digest.Sum(r.keyHash[:0])
			}
			if err == nil {
				valueLen, err = body.varint()
			}
			if err != nil {
				return fmt.Errorf("record %d: %w", i, eofAsShape(err))
			}
			r.hasKey, r.hasValue, r.hashed = keyLen >= 0, valueLen >= 0, true
		}
		keep, err := decide(r)
		if err != nil {
			return err
		}
		switch {
		case out != nil && keep:
			// The new head, then the rest of the record as it is.
			tsDelta := r.timestamp - baseTs
			rest := int64(length) - int64(pfxLen)
			s.pfx = s.pfx[:0]
			s.pfx = binary.AppendVarint(s.pfx, rest+1+int64(varintLen(tsDelta)+varintLen(int64(r.offDelta))))
			s.pfx = append(s.pfx, 0)
			s.pfx = binary.AppendVarint(s.pfx, tsDelta)
			s.pfx = binary.AppendVarint(s.pfx, int64(r.offDelta))
			_, _ = out.Write(s.pfx) // a write error stays in out for Flush
			if ok {
				win.pos += pfxLen
				body.left -= int64(pfxLen)
			}
			body.tee = out
			err = parseFromKey(&body)
		case ok:
			win.pos += headLen
			body.left -= int64(headLen)
			err = parseFromValue(&body, valueLen)
		case out != nil:
			err = parseFromKey(&body)
		default:
			err = parseFromValue(&body, valueLen)
		}
		if err != nil {
			return fmt.Errorf("record %d: %w", i, eofAsShape(err))
		}
		if body.left != 0 {
			return fmt.Errorf("record %d: %w", i, recordbatch.ErrRecordLength)
		}
	}
	if _, err := win.ReadByte(); err == nil {
		return recordbatch.ErrRecordsRemaining
	} else if err != io.EOF {
		return err
	}
	return nil
}

func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// scanRecordHead parses a record's head (attributes, timestamp delta,
// offset delta, key, value length) from b, the start of its body, filling
// r's deltas; pfxLen is the length of attributes and deltas, headLen that of
// the whole head. ok is false when b does not hold it all.
func scanRecordHead(b []byte, r *cleanRecord) (key []byte, valueLen int32, pfxLen, headLen int, ok bool) {
	if len(b) < 1 {
		return nil, 0, 0, 0, false
	}
	pos := 1 // attributes
	var n int
	if r.tsDelta, n = recordbatch.Varlong(b[pos:]); n <= 0 {
		return nil, 0, 0, 0, false
	}
	pos += n
	if r.offDelta, n = recordbatch.Varint32(b[pos:]); n <= 0 {
		return nil, 0, 0, 0, false
	}
	pos += n
	pfxLen = pos
	keyLen, n := recordbatch.Varint32(b[pos:])
	if n <= 0 {
		return nil, 0, 0, 0, false
	}
	pos += n
	if keyLen >= 0 {
		if int(keyLen) > len(b)-pos {
			return nil, 0, 0, 0, false
		}
		key = b[pos : pos+int(keyLen) : pos+int(keyLen)]
		pos += int(keyLen)
	}
	if valueLen, n = recordbatch.Varint32(b[pos:]); n <= 0 {
		return nil, 0, 0, 0, false
	}
	return key, valueLen, pfxLen, pos + n, true
}

// parseFromKey reads the rest of a record body from its key length.
func parseFromKey(r *bodyReader) error {
	keyLen, err := r.varint()
	if err != nil {
		return err
	}
	if err := r.skip(keyLen); err != nil {
		return err
	}
	valueLen, err := r.varint()
	if err != nil {
		return err
	}
	return parseFromValue(r, valueLen)
}

// parseFromValue reads the rest of a record body from its value (whose
// length was read): the value and the headers.
func parseFromValue(r *bodyReader, valueLen int32) error {
	if err := r.skip(valueLen); err != nil {
		return err
	}
	headers, err := r.varint()
	if err != nil {
		return err
	}
	if headers < 0 {
		return recordbatch.ErrHeaderCount
	}
	for h := int32(0); h < headers; h++ {
		kl, err := r.varint()
		if err != nil {
			return err
		}
		if kl < 0 {
			return recordbatch.ErrHeaderKeyLength
		}
		if err := r.skip(kl); err != nil {
			return err
		}
		vl, err := r.varint()
		if err != nil {
			return err
		}
		if err := r.skip(vl); err != nil {
			return err
		}
	}
	return nil
}

// appendEmptyBatch appends the header-only batch Kafka keeps when every
// record of h is removed but the batch must stay (DefaultRecordBatch.
// writeEmptyHeader): h's offsets, producer fields, leader epoch, timestamp
// type, transactional and control bits and maxTimestamp; no codec, no
// delete horizon, baseTimestamp -1, zero records.
func appendEmptyBatch(dst []byte, h *batchHeader) []byte {
	out := *h
	out.Attributes = h.Attributes & (recordbatch.AttrTimestampType | recordbatch.AttrTransactional | recordbatch.AttrControl)
	out.BaseTimestamp = recordbatch.NoTimestamp
	out.RecordCount = 0
	out.BatchLength = recordbatch.HeaderSize - recordbatch.LogOverhead
	start := len(dst)
	dst = append(dst, make([]byte, recordbatch.HeaderSize)...)
	out.Put(dst[start:])
	return dst
}
