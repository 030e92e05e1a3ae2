package protocol

import (
	"encoding/binary"
	"errors"
)

// Kafka's primitive types, appended big-endian. kmsg's kbin has the same
// helpers but is internal to kmsg.

func appendInt16(dst []byte, v int16) []byte {
	return binary.BigEndian.AppendUint16(dst, uint16(v))
}

func appendInt32(dst []byte, v int32) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(v))
}

func appendInt64(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

func appendUvarint(dst []byte, v uint32) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// appendString appends a non-null string: compact (uvarint length+1) in
// flexible versions, int16 length otherwise.
func appendString(dst []byte, s string, flexible bool) []byte {
	if flexible {
		dst = appendUvarint(dst, uint32(len(s))+1)
	} else {
		dst = appendInt16(dst, int16(len(s)))
	}
	return append(dst, s...)
}

func appendNullableString(dst []byte, s *string, flexible bool) []byte {
	if s == nil {
		if flexible {
			return append(dst, 0)
		}
		return appendInt16(dst, -1)
	}
	return appendString(dst, *s, flexible)
}

func appendArrayLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return appendUvarint(dst, uint32(n)+1)
	}
	return appendInt32(dst, int32(n))
}

func appendNullableArrayLen(dst []byte, n int, isNil, flexible bool) []byte {
	if isNil {
		if flexible {
			return append(dst, 0)
		}
		return appendInt32(dst, -1)
	}
	return appendArrayLen(dst, n, flexible)
}

// errShortRead is what wireReader reports when a field runs past the input.
var errShortRead = errors.New("not enough bytes")

// wireReader reads primitives from untrusted bytes. Every read checks the
// bytes that remain; after the first failure, err is set and every later read
// returns zero, so callers check err once at the end of a group of reads.
type wireReader struct {
	src []byte
	err error
}

func (r *wireReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.src = nil
}

func (r *wireReader) int16() int16 {
	if len(r.src) < 2 {
		r.fail(errShortRead)
		return 0
	}
	v := int16(binary.BigEndian.Uint16(r.src))
	r.src = r.src[2:]
	return v
}

func (r *wireReader) int32() int32 {
	if len(r.src) < 4 {
		r.fail(errShortRead)
		return 0
	}
	v := int32(binary.BigEndian.Uint32(r.src))
	r.src = r.src[4:]
	return v
}

// uvarint reads an unsigned varint of at most 32 bits, as Kafka's
// ByteUtils.readUnsignedVarint does (at most 5 bytes).
func (r *wireReader) uvarint() uint32 {
	var v uint32
	for i := 0; i < 5; i++ {
		if len(r.src) == 0 {
			r.fail(errShortRead)
			return 0
		}
		b := r.src[0]
		r.src = r.src[1:]
		if i == 4 && b > 0x0f {
			r.fail(errors.New("varint overflows 32 bits"))
			return 0
		}
		v |= uint32(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v
		}
	}
	r.fail(errors.New("varint longer than 5 bytes"))
	return 0
}

// span returns the next n bytes without copying; n is checked against what
// remains before anything is sliced.
func (r *wireReader) span(n int) []byte {
	if n < 0 || n > len(r.src) {
		r.fail(errShortRead)
		return nil
	}
	v := r.src[:n:n]
	r.src = r.src[n:]
	return v
}

// nullableStringCached reads an int16-length nullable string (header
// client id), returning the cached one when the bytes are the same.
func (r *wireReader) nullableStringCached(cache *ClientIDCache) *string {
	n := r.int16()
	if r.err != nil || n < 0 {
		// Kafka's generated header reader treats any negative length as null.
		return nil
	}
	b := r.span(int(n))
	if r.err != nil {
		return nil
	}
	if cache != nil && cache.last != nil && *cache.last == string(b) {
		return cache.last
	}
	s := string(b)
	if cache != nil {
		cache.last = &s
	}
	return &s
}

// skipTags skips a tagged-field section: a count, then for each field a tag
// and a size-prefixed value, each size checked against the remaining bytes.
func (r *wireReader) skipTags() {
	n := r.uvarint()
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.uvarint() // tag
		size := r.uvarint()
		if r.err != nil {
			return
		}
		if uint64(size) > uint64(len(r.src)) {
			r.fail(errShortRead)
			return
		}
		r.src = r.src[size:]
	}
}
