package recordbatch

import "errors"

// Varints of records are zigzag encoded, 7 bits a byte, least significant
// group first: a varint (int32) takes at most 5 bytes, a varlong (int64) at
// most 10. These are the one decoder and encoder of them in Strait.

// Errors of a varint, and of the record fields they measure. Their text is
// what storage reports in INVALID_RECORD.
var (
	ErrVarintTooLong = &FormatError{"varint too long"}
	ErrVarintRange   = &FormatError{"varint out of int32 range"}
)

// Results of Varint32 and Varlong besides a length > 0.
const (
	VarintShort   = 0  // b ends before the varint does
	VarintTooLong = -1 // more bytes than the type allows
	VarintRange   = -2 // a varint outside int32
)

// Varint32 decodes a zigzag varint (at most 5 bytes, int32) from the start
// of b. n > 0 is the number of bytes read; otherwise n is VarintShort,
// VarintTooLong or VarintRange. It is small enough to be inlined.
func Varint32(b []byte) (v int32, n int) {
	var ux uint64
	var shift uint
	for i, c := range b {
		if c < 0x80 {
			if v := Unzigzag(ux | uint64(c)<<shift); v == int64(int32(v)) {
				return int32(v), i + 1
			}
			return 0, VarintRange
		}
		if i == 4 {
			return 0, VarintTooLong
		}
		ux |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, VarintShort
}

// Varlong decodes a zigzag varlong (at most 10 bytes) from the start of b,
// with Varint32's results. As Kafka's ByteUtils.readVarlong, the tenth
// byte's high bits are dropped.
func Varlong(b []byte) (v int64, n int) {
	var ux uint64
	var shift uint
	for i, c := range b {
		if c < 0x80 {
			return Unzigzag(ux | uint64(c)<<shift), i + 1
		}
		if i == 9 {
			return 0, VarintTooLong
		}
		ux |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, VarintShort
}

// Unzigzag is the value of a zigzag-encoded unsigned varint, for a reader
// that gathers the bytes itself (a stream being decompressed).
func Unzigzag(ux uint64) int64 { return int64(ux>>1) ^ -int64(ux&1) }

// AppendVarint appends v zigzag encoded (a varint when v fits int32, else
// a varlong).
func AppendVarint(dst []byte, v int64) []byte {
	ux := uint64(v<<1) ^ uint64(v>>63)
	for ux >= 0x80 {
		dst = append(dst, byte(ux)|0x80)
		ux >>= 7
	}
	return append(dst, byte(ux))
}

// VarintLen is the number of bytes AppendVarint takes for v.
func VarintLen(v int64) int {
	ux := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for ux >= 0x80 {
		ux >>= 7
		n++
	}
	return n
}

// FormatError is a structural error of a batch's records; storage answers
// it with INVALID_RECORD.
type FormatError struct{ Msg string }

func (e *FormatError) Error() string { return e.Msg }

// IsFormatError reports whether err is (or wraps) a FormatError.
func IsFormatError(err error) bool {
	var f *FormatError
	return errors.As(err, &f)
}
