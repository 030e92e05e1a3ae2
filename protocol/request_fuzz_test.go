package protocol

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// allocBound is the most a request decode may allocate for an input of n
// bytes: kmsg sizes every array by its claimed length, which kbin refuses
// beyond the bytes left, so the worst case is one element struct per input
// byte (the largest element structs are a few hundred bytes).
func allocBound(n int) uint64 { return 64<<10 + 1024*uint64(n) }

// fuzzFrame is a request frame for key and version with correlation id 1,
// followed by rest (client id, tagged fields and body, as the fuzzer makes
// them).
func fuzzFrame(key, version int16, rest []byte) []byte {
	frame := make([]byte, 8, 8+len(rest))
	binary.BigEndian.PutUint16(frame[0:], uint16(key))
	binary.BigEndian.PutUint16(frame[2:], uint16(version))
	binary.BigEndian.PutUint32(frame[4:], 1)
	return append(frame, rest...)
}

// seedRest is the header remainder and body of a real encoding of the
// empty request for key at version: the client id "c", tagged fields when
// flexible, and kmsg's encoding of the default body.
func seedRest(key, version int16) []byte {
	body := kmsg.RequestForKey(key)
	body.SetVersion(version)
	rest := []byte{0, 1, 'c'}
	if body.IsFlexible() && !(key == controlledShutdownKey && version == 0) {
		rest = append(rest, 0)
	}
	return body.AppendTo(rest)
}

// FuzzDecodeRequest decodes any bytes as a request for any key and version
// the broker registers (KafkaVersions): no panic, allocation within
// allocBound of the input, and a decoded request re-encodes.
func FuzzDecodeRequest(f *testing.F) {
	for key, vr := range KafkaVersions {
		body := kmsg.RequestForKey(key)
		if body == nil {
			continue
		}
		for v := vr.Min; v <= min(vr.Max, body.MaxVersion()); v++ {
			f.Add(key, v, seedRest(key, v))
		}
	}
	f.Fuzz(func(t *testing.T, key, version int16, rest []byte) {
		frame := fuzzFrame(key, version, rest)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		req, err := ParseRequest(frame, KafkaVersions, nil)
		runtime.ReadMemStats(&after)
		if got, bound := after.TotalAlloc-before.TotalAlloc, allocBound(len(frame)); got > bound {
			t.Fatalf("key %d v%d: decoding %d bytes allocated %d, over the bound %d", key, version, len(frame), got, bound)
		}
		if err != nil {
			if req != nil {
				t.Fatalf("key %d v%d: a request with the error %v", key, version, err)
			}
			return
		}
		if req.Key != key || req.Version != version {
			t.Fatalf("decoded key %d v%d from a frame for key %d v%d", req.Key, req.Version, key, version)
		}
		if !req.UnsupportedVersion && req.Body.GetVersion() != version {
			t.Fatalf("body version %d, want %d", req.Body.GetVersion(), version)
		}
		_ = req.Body.AppendTo(nil)
	})
}
