package protocol

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchFixture is a Fetch response with several topics and partitions, and
// for each partition its record bytes, which the test hands to
// AppendFetchResponse as chunks (part bytes, part file regions).
type fetchFixture struct {
	resp    *kmsg.FetchResponse
	records [][][]byte
}

func newFetchFixture(version int16) fetchFixture {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(version)
	resp.ThrottleMillis = 17
	resp.ErrorCode = 0
	resp.SessionID = 123456
	var records [][][]byte
	for ti := 0; ti < 3; ti++ {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = fmt.Sprintf("topic-%d", ti)
		t.TopicID = [16]byte{byte(ti + 1), 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
		if ti == 1 {
			t.UnknownTags.Set(7, []byte("topic-tag"))
		}
		var topicRecords [][]byte
		for pi := 0; pi < 4; pi++ {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(pi * 3)
			p.HighWatermark = int64(1000 + pi)
			p.LastStableOffset = int64(900 + pi)
			p.LogStartOffset = int64(pi)
			p.PreferredReadReplica = int32(pi - 1)
			switch pi {
			case 0: // null aborted transactions, records from two sources
				p.AbortedTransactions = nil
			case 1: // empty, non-null
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
				p.ErrorCode = 1
			case 2:
				for i := 0; i < 3; i++ {
					a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					a.ProducerID, a.FirstOffset = int64(5000+i), int64(10*i)
					if i == 1 {
						a.UnknownTags.Set(3, []byte{9})
					}
					p.AbortedTransactions = append(p.AbortedTransactions, a)
				}
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = 4, 77
				p.SnapshotID.EndOffset, p.SnapshotID.Epoch = 88, 2
			case 3:
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 2, 9
				p.CurrentLeader.UnknownTags.Set(1, []byte("x"))
				p.UnknownTags.Set(10, []byte("partition-tag"))
			}
			var rec []byte
			if pi != 1 { // partition 1 has no records: empty, not null
				rec = bytes.Repeat([]byte{byte(ti*16 + pi)}, 100*(pi+1)+ti)
				for i := range rec {
					rec[i] += byte(i)
				}
			}
			p.RecordBatches = append([]byte{}, rec...)
			topicRecords = append(topicRecords, rec)
			t.Partitions = append(t.Partitions, p)
		}
		records = append(records, topicRecords)
		resp.Topics = append(resp.Topics, t)
	}
	if version >= 16 {
		for i := int32(0); i < 2; i++ {
			b := kmsg.NewFetchResponseBroker()
			b.NodeID, b.Host, b.Port = i, fmt.Sprintf("broker-%d", i), 9092+i
			if i == 1 {
				b.Rack = strPtr("rack-a")
			}
			resp.Brokers = append(resp.Brokers, b)
		}
		resp.UnknownTags.Set(5, []byte("top"))
	}
	return fetchFixture{resp: resp, records: records}
}

// kmsgFetchFrame is the reference: size, header, kmsg's encoding of the body.
func kmsgFetchFrame(correlationID int32, resp *kmsg.FetchResponse) []byte {
	b := []byte{0, 0, 0, 0}
	b = kbin.AppendInt32(b, correlationID)
	if resp.IsFlexible() {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// chunksOf splits rec into chunks: the first third as bytes, the middle as a
// region of file (written at a fresh offset), an empty chunk, and the rest as
// bytes. Nil rec gives no chunks.
func chunksOf(t *testing.T, file *os.File, rec []byte) []Chunk {
	if len(rec) == 0 {
		return nil
	}
	a, b := len(rec)/3, 2*len(rec)/3
	pos, err := file.Seek(0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.Write(append([]byte("junk"), rec[a:b]...)); err != nil {
		t.Fatal(err)
	}
	return []Chunk{
		{Bytes: rec[:a]},
		{File: file, Pos: pos + 4, Len: int64(b - a)},
		{Bytes: []byte{}},
		{Bytes: rec[b:]},
	}
}

func concatChunks(t *testing.T, chunks []Chunk) []byte {
	var out []byte
	for _, c := range chunks {
		if c.File == nil {
			out = append(out, c.Bytes...)
			continue
		}
		region := make([]byte, c.Len)
		if _, err := c.File.ReadAt(region, c.Pos); err != nil {
			t.Fatal(err)
		}
		out = append(out, region...)
	}
	return out
}

func TestAppendFetchResponseMatchesKmsg(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for version := int16(4); version <= (&kmsg.FetchResponse{}).MaxVersion(); version++ {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			fx := newFetchFixture(version)
			want := kmsgFetchFrame(31337, fx.resp)

			req := &Request{Key: 1, Version: version, CorrelationID: 31337, Body: &kmsg.FetchRequest{Version: version}}
			prefix := []Chunk{{Bytes: []byte("previous frame")}}
			chunks := AppendFetchResponse(prefix, req, fx.resp, func(ti, pi int) []Chunk {
				return chunksOf(t, file, fx.records[ti][pi])
			})
			if string(chunks[0].Bytes) != "previous frame" {
				t.Fatal("existing chunks were not kept")
			}
			var files int
			for _, c := range chunks {
				if c.File != nil {
					files++
				}
			}
			if files != 9 { // 3 topics x 3 partitions with records
				t.Fatalf("%d file chunks, want 9", files)
			}
			got := concatChunks(t, chunks[1:])
			if !bytes.Equal(got, want) {
				t.Fatalf("layout differs from kmsg (got %d bytes, want %d)\n got %x\nwant %x", len(got), len(want), got, want)
			}

			// And the frame decodes back to the same response.
			dec := kmsg.NewPtrFetchResponse()
			dec.SetVersion(version)
			hdr := 8
			if version >= 12 {
				hdr = 9
			}
			if err := dec.ReadFrom(got[hdr:]); err != nil {
				t.Fatal(err)
			}
			if len(dec.Topics) != 3 || len(dec.Topics[2].Partitions) != 4 ||
				!bytes.Equal(dec.Topics[2].Partitions[3].RecordBatches, fx.records[2][3]) {
				t.Fatal("decoded response differs")
			}
		})
	}
}

func TestAppendFetchResponseEmpty(t *testing.T) {
	for _, version := range []int16{4, 12, 17} {
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(version)
		req := &Request{Key: 1, Version: version, CorrelationID: 1, Body: &kmsg.FetchRequest{Version: version}}
		chunks := AppendFetchResponse(nil, req, resp, func(int, int) []Chunk { t.Fatal("no partitions"); return nil })
		if len(chunks) != 1 {
			t.Fatalf("v%d: %d chunks for an empty response", version, len(chunks))
		}
		if got, want := concatChunks(t, chunks), kmsgFetchFrame(1, resp); !bytes.Equal(got, want) {
			t.Fatalf("v%d: %x, want %x", version, got, want)
		}
		// The chunk is capped: appending to it cannot touch other memory.
		if c := chunks[0].Bytes; cap(c) != len(c) {
			t.Fatalf("v%d: chunk not capped", version)
		}
	}
}
