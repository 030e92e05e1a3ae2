package protocol

import "github.com/twmb/franz-go/pkg/kbin"

// Kafka's primitive types are read and written with franz-go's kbin. What
// kbin lacks is here: the request header's client id read through a
// per-connection cache, and skipping a tagged-field section (kmsg's own
// skipper is internal to kmsg).

// readClientID reads the request header's client id, an int16-length
// nullable string, returning the cached one when the bytes are the same.
func readClientID(r *kbin.Reader, cache *ClientIDCache) *string {
	n := r.Int16()
	if !r.Ok() || n < 0 {
		// Kafka's generated header reader treats any negative length as null.
		return nil
	}
	b := r.Span(int(n))
	if !r.Ok() {
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
// and a size-prefixed value, each size checked against the remaining bytes
// (kbin.Reader.Span fails on a size beyond them).
func skipTags(r *kbin.Reader) {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		r.Uvarint() // tag
		size := r.Uvarint()
		if uint64(size) > uint64(len(r.Src)) {
			r.Span(-1) // invalidates the reader
			return
		}
		r.Span(int(size))
	}
}

// kbin has a function per encoding; these pick the compact one in flexible
// versions, as kmsg's generated code does inline.

func appendArrayLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactArrayLen(dst, n)
	}
	return kbin.AppendArrayLen(dst, n)
}

func appendNullableArrayLen(dst []byte, n int, isNil, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactNullableArrayLen(dst, n, isNil)
	}
	return kbin.AppendNullableArrayLen(dst, n, isNil)
}

func appendString(dst []byte, s string, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactString(dst, s)
	}
	return kbin.AppendString(dst, s)
}
