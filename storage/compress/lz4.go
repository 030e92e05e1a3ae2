package compress

import (
	"encoding/binary"
	"io"
	"math/bits"
)

// The LZ4 decoder (pierrec/lz4) takes two buffers of a frame's declared
// maximum block size (64 KiB, 256 KiB, 1 MiB or 4 MiB, from pools) before
// reading a block, whatever the frame holds: a frame of a few dozen bytes
// declaring 4 MiB blocks costs 8 MiB. No LZ4 block expands more than 255
// times (a match of n bytes takes at least n/255 bytes), so a frame of n
// bytes cannot produce a block over 255n bytes: lz4View hands the decoder
// each frame with its declared block size lowered to the smallest that
// holds 255n, when that is smaller, and its header checksum recomputed.
// The bound per stream is thus two buffers of min(declared block size,
// the next block size >= 255 x the frame's bytes).

const (
	lz4FrameMagic      = 0x184D2204
	lz4MaxExpansion    = 255
	lz4MinBlockSizeIdx = 4 // 64 KiB
	lz4MaxBlockSizeIdx = 7 // 4 MiB
	lz4FlagBlockSum    = 0x10
	lz4FlagSize        = 0x08
	lz4FlagContentSum  = 0x04
	lz4FlagDictID      = 0x01
)

func lz4BlockSize(idx byte) int64 { return 1 << (8 + 2*int64(idx)) } // 4: 64 KiB ... 7: 4 MiB

// lz4View sets r to read src with the frames' block sizes lowered as above.
// Anything it does not recognise (a legacy or skippable frame, a bad
// header checksum, a truncated frame) is passed on as it is from there,
// for the decoder to read or refuse.
func (r *sliceReader) lz4View(src []byte) {
	r.parts, r.next = r.parts[:0], 0
	r.hdrs = r.hdrs[:0]
	pos := 0
	for pos < len(src) {
		end, descLen, ok := lz4FrameEnd(src[pos:])
		if !ok {
			break
		}
		frame := src[pos : pos+end]
		hdr := frame[:4+descLen+1]
		bd := hdr[5]
		idx := (bd >> 4) & 7
		need := int64(len(frame)) * lz4MaxExpansion
		lower := byte(lz4MinBlockSizeIdx)
		for lower < idx && lz4BlockSize(lower) < need {
			lower++
		}
		if lower < idx && lz4DescriptorChecksum(hdr[4:4+descLen]) == hdr[4+descLen] {
			start := len(r.hdrs)
			r.hdrs = append(r.hdrs, hdr...)
			patched := r.hdrs[start:]
			patched[5] = bd&^0x70 | lower<<4
			patched[4+descLen] = lz4DescriptorChecksum(patched[4 : 4+descLen])
			r.parts = append(r.parts, patched, frame[len(hdr):])
		} else {
			r.parts = append(r.parts, frame)
		}
		pos += end
	}
	if pos < len(src) {
		r.parts = append(r.parts, src[pos:])
	}
}

// lz4FrameEnd returns the length of the LZ4 frame at the start of b and of
// its descriptor (FLG, BD and the optional fields, without the checksum
// byte); ok is false if b does not start with a whole frame it can walk.
func lz4FrameEnd(b []byte) (end, descLen int, ok bool) {
	if len(b) < 7 || binary.LittleEndian.Uint32(b) != lz4FrameMagic {
		return 0, 0, false
	}
	flg, bd := b[4], b[5]
	if flg>>6 != 1 || flg&lz4FlagDictID != 0 {
		return 0, 0, false
	}
	if idx := (bd >> 4) & 7; idx < lz4MinBlockSizeIdx || idx > lz4MaxBlockSizeIdx {
		return 0, 0, false
	}
	descLen = 2
	if flg&lz4FlagSize != 0 {
		descLen += 8
	}
	p := 4 + descLen + 1
	for {
		if p+4 > len(b) {
			return 0, 0, false
		}
		size := binary.LittleEndian.Uint32(b[p:])
		p += 4
		if size == 0 {
			break
		}
		n := int(size & 0x7fffffff)
		if n > len(b)-p {
			return 0, 0, false
		}
		p += n
		if flg&lz4FlagBlockSum != 0 {
			p += 4
		}
	}
	if flg&lz4FlagContentSum != 0 {
		p += 4
	}
	if p > len(b) {
		return 0, 0, false
	}
	return p, descLen, true
}

// lz4DescriptorChecksum is the frame descriptor's header checksum: the
// second byte of the XXH32 (seed 0) of the descriptor. A descriptor has
// at most 14 bytes, so only XXH32's short-input path is needed.
func lz4DescriptorChecksum(desc []byte) byte {
	const (
		p1 = 2654435761
		p2 = 2246822519
		p3 = 3266489917
		p4 = 668265263
		p5 = 374761393
	)
	h := uint32(p5) + uint32(len(desc))
	for ; len(desc) >= 4; desc = desc[4:] {
		h += binary.LittleEndian.Uint32(desc) * p3
		h = bits.RotateLeft32(h, 17) * p4
	}
	for _, c := range desc {
		h += uint32(c) * p5
		h = bits.RotateLeft32(h, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return byte(h >> 8)
}

// sliceReader reads the concatenation of parts from parts[next]; hdrs
// backs patched headers. Reading moves next rather than reslicing parts,
// so that parts keeps its capacity for the next batch (no allocation per
// batch once the pool's reader has seen one).
type sliceReader struct {
	parts [][]byte
	next  int
	hdrs  []byte
}

func (r *sliceReader) Read(p []byte) (int, error) {
	for r.next < len(r.parts) && len(r.parts[r.next]) == 0 {
		r.next++
	}
	if r.next == len(r.parts) {
		return 0, io.EOF
	}
	n := copy(p, r.parts[r.next])
	r.parts[r.next] = r.parts[r.next][n:]
	return n, nil
}

func (r *sliceReader) reset() {
	clear(r.parts[:cap(r.parts)])
	r.parts, r.next = r.parts[:0], 0
	r.hdrs = r.hdrs[:0]
}
