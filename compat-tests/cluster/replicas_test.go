package cluster

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/strait/strait/compat-tests/internal/brokerproc"
)

// batchHeader identifies one record batch in a replica's segment files.
// Followers copy the leader's batches byte for byte, so the replicas of a
// partition hold the same list once they have caught up.
type batchHeader struct {
	baseOffset  int64
	lastDelta   int32
	leaderEpoch int32
	crc         uint32
}

// replicaBatches reads the batch headers of partition p of topic from
// broker n's log directory (segments in offset order; a torn tail ends it).
func replicaBatches(n *brokerproc.Node, topic string, p int32) ([]batchHeader, error) {
	files, err := filepath.Glob(filepath.Join(n.Dir, "data", fmt.Sprintf("%s-%d", topic, p), "*.log"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files) // %020d names sort in offset order
	var out []batchHeader
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for len(b) >= 61 {
			length := int(binary.BigEndian.Uint32(b[8:12]))
			if length < 49 || 12+length > len(b) {
				break
			}
			out = append(out, batchHeader{
				baseOffset:  int64(binary.BigEndian.Uint64(b[0:8])),
				leaderEpoch: int32(binary.BigEndian.Uint32(b[12:16])),
				crc:         binary.BigEndian.Uint32(b[17:21]),
				lastDelta:   int32(binary.BigEndian.Uint32(b[23:27])),
			})
			b = b[12+length:]
		}
	}
	return out, nil
}

// compareReplicas checks that every broker holds the same batches for each
// partition; it returns the batch count per partition.
func compareReplicas(c *cluster, topic string, parts int32) (map[int32]int, error) {
	counts := map[int32]int{}
	for p := int32(0); p < parts; p++ {
		var first []batchHeader
		for i, n := range c.Nodes {
			bs, err := replicaBatches(n, topic, p)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				first = bs
				continue
			}
			if !slices.Equal(first, bs) {
				j := 0
				for j < len(first) && j < len(bs) && first[j] == bs[j] {
					j++
				}
				return nil, fmt.Errorf("partition %d: broker %d holds %d batches, broker 1 %d; first difference at batch %d (%s vs %s)",
					p, n.ID, len(bs), len(first), j, at(first, j), at(bs, j))
			}
		}
		counts[p] = len(first)
	}
	return counts, nil
}

func at(bs []batchHeader, i int) string {
	if i >= len(bs) {
		return "end"
	}
	return fmt.Sprintf("%+v", bs[i])
}
