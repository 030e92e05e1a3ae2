package compress

import (
	"bytes"
	"io"
	"testing"

	"github.com/golang/snappy"
)

func TestRoundTripEveryCodec(t *testing.T) {
	src := bytes.Repeat([]byte("strait record payload "), 5000) // > one xerial block
	for _, c := range []Codec{None, Gzip, Snappy, LZ4, Zstd} {
		enc, err := Compress(c, []byte("prefix"), src)
		if err != nil {
			t.Fatalf("%s: compress: %v", c, err)
		}
		if !bytes.HasPrefix(enc, []byte("prefix")) {
			t.Fatalf("%s: dst prefix lost", c)
		}
		for i := 0; i < 2; i++ { // second round uses pooled decoders
			got, err := Decompress(c, enc[len("prefix"):], int64(len(src)))
			if err != nil {
				t.Fatalf("%s: decompress: %v", c, err)
			}
			if !bytes.Equal(got, src) {
				t.Fatalf("%s: round trip mismatch", c)
			}
		}
		if _, err := Decompress(c, enc[len("prefix"):], int64(len(src)-1)); err == nil {
			t.Fatalf("%s: limit not enforced", c)
		}
	}
}

func TestSnappyRawBlock(t *testing.T) {
	src := []byte("raw snappy as librdkafka writes it")
	got, err := Decompress(Snappy, snappy.Encode(nil, src), 1<<20)
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("raw snappy: %q, %v", got, err)
	}
}

func TestCorruptInputErrors(t *testing.T) {
	junk := []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}
	for _, c := range []Codec{Gzip, Snappy, LZ4, Zstd} {
		r, err := NewReader(c, junk)
		if err == nil {
			_, err = io.ReadAll(r)
			r.Close()
		}
		if err == nil {
			t.Fatalf("%s: junk decoded without error", c)
		}
	}
	if _, err := NewReader(Codec(5), nil); err == nil {
		t.Fatal("codec 5 accepted")
	}
	// A xerial block length running past the input.
	framed, _ := Compress(Snappy, nil, []byte("hello"))
	framed[xerialHeaderSize+3] = 0xff
	if _, err := Decompress(Snappy, framed, 1<<20); err == nil {
		t.Fatal("overlong xerial block accepted")
	}
}
