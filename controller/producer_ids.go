package controller

// Producer id blocks. Kafka hands out producer ids (InitProducerId) from
// blocks of 1000 that the controller allocates to each broker
// (ProducerIdControlManager over KRaft; ZooKeeper's /latest_producer_id_block
// before), so that no two brokers ever give out the same id and a broker
// needs the control plane only once per 1000 producers.
//
// Strait keeps the last allocated block in one etcd key and allocates the
// next with a compare-and-swap transaction on it, which serializes brokers
// sharing the etcd without a lock or the active controller being involved:
//
//	<prefix>/producer_ids   {"version":1,"broker":<node id>,"block_start":"<first id>","block_end":"<last id>"}
//
// The value has ZooKeeper's ProducerIdBlockZNode layout (ids as decimal
// strings, block_end inclusive). An absent key means no block was ever
// allocated: the first block starts at 0, as in Kafka.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ProducerIDBlockSize is the number of producer ids in one block (Kafka's
// ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).
const ProducerIDBlockSize = 1000

// producerIDsSegment is the key under the prefix; the metadata cache ignores
// it (it is not metadata any reader needs).
const producerIDsSegment = "producer_ids"

func (k keyspace) producerIDs() string { return k.root() + producerIDsSegment }

// producerIDBlockRecord is the JSON value of the producer_ids key.
type producerIDBlockRecord struct {
	Version    int    `json:"version"`
	Broker     int32  `json:"broker"`
	BlockStart string `json:"block_start"`
	BlockEnd   string `json:"block_end"`
}

// AllocateProducerIDBlock reserves the next ProducerIDBlockSize producer ids
// for this broker and returns the first and the last (inclusive). Concurrent
// callers, on this or any broker sharing the etcd, get disjoint blocks. Once
// the int64 space is exhausted it fails with UNKNOWN_SERVER_ERROR, as Kafka.
func (c *Controller) AllocateProducerIDBlock(ctx context.Context) (first, last int64, err error) {
	if !c.running() {
		return 0, 0, ErrNotStarted
	}
	key := c.ks.producerIDs()
	for {
		resp, err := c.client.Get(ctx, key)
		if err != nil {
			return 0, 0, fmt.Errorf("controller: reading the producer id block: %w", err)
		}
		next := int64(0)
		unchanged := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		if len(resp.Kvs) > 0 {
			kv := resp.Kvs[0]
			prevEnd, err := decodeProducerIDBlockEnd(kv.Value)
			if err != nil {
				return 0, 0, fmt.Errorf("controller: %s: %w", key, err)
			}
			next = prevEnd + 1
			unchanged = clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)
		}
		if next < 0 || next > math.MaxInt64-ProducerIDBlockSize {
			return 0, 0, apiError(kerr.UnknownServerError,
				"Exhausted all producerIds as the next block's end producerId has exceeded the int64 type limit")
		}
		first, last = next, next+ProducerIDBlockSize-1
		value, err := json.Marshal(producerIDBlockRecord{
			Version:    1,
			Broker:     c.cfg.NodeID,
			BlockStart: strconv.FormatInt(first, 10),
			BlockEnd:   strconv.FormatInt(last, 10),
		})
		if err != nil {
			return 0, 0, err
		}
		txn, err := c.client.Txn(ctx).If(unchanged).Then(clientv3.OpPut(key, string(value))).Commit()
		if err != nil {
			return 0, 0, fmt.Errorf("controller: allocating a producer id block: %w", err)
		}
		if txn.Succeeded {
			c.log.Info("allocated producer id block", "node.id", c.cfg.NodeID, "first", first, "last", last)
			return first, last, nil
		}
		// Another broker allocated a block in between: read it and try again.
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
	}
}

// decodeProducerIDBlockEnd returns the last id of the block stored in value.
func decodeProducerIDBlockEnd(value []byte) (int64, error) {
	var rec producerIDBlockRecord
	if err := json.Unmarshal(value, &rec); err != nil {
		return 0, fmt.Errorf("malformed producer id block: %w", err)
	}
	if rec.Version != 1 {
		return 0, fmt.Errorf("unknown producer id block version %d", rec.Version)
	}
	end, err := strconv.ParseInt(rec.BlockEnd, 10, 64)
	if err != nil {
		return 0, errors.New("malformed producer id block: block_end is not an int64")
	}
	return end, nil
}
