package reference

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The producer sequences of the conformance harness: an idempotent producer
// (duplicates, sequence gaps, stale epochs) and a transactional one whose
// aborted records a read_committed consumer must not see.

const (
	cfIdem = "cf-idem" // idempotent produce
	cfTxp  = "cf-txp"  // transactional produce, aborted
)

// producerBatch is batch (reference_test.go) with a producer id, epoch and
// first sequence, transactional when txn is set.
func producerBatch(pid int64, epoch int16, seq int32, txn bool, recs []rec) []byte {
	var body []byte
	for i, r := range recs {
		kr := kmsg.Record{TimestampDelta64: r.ts - recs[0].ts, OffsetDelta: int32(i), Key: r.key, Value: r.value}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		body = kr.AppendTo(body)
	}
	b := kmsg.RecordBatch{
		Magic: 2, LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: recs[0].ts, MaxTimestamp: recs[len(recs)-1].ts,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(len(recs)), Records: body,
	}
	if txn {
		b.Attributes = 0x10
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	return raw
}

func twoRecords() []rec {
	return []rec{{[]byte("a"), []byte("1"), baseTS + 200}, {[]byte("b"), []byte("2"), baseTS + 201}}
}

// producerProduce produces a batch of the producer kept in t ("pid",
// "pepoch") with the sequence and epoch shifted as given.
func producerProduce(topic string, seq int32, epochDelta int16, txn bool) func(*target) kmsg.Request {
	return func(t *target) kmsg.Request {
		raw := producerBatch(t.i64("pid"), t.i16("pepoch")+epochDelta, seq, txn, twoRecords())
		r := produceReq(topic, 0, raw)(t).(*kmsg.ProduceRequest)
		if txn {
			r.TransactionID = kmsg.StringPtr(t.name("cf-txp"))
		}
		return r
	}
}

func producerScenarios() []scenario {
	return []scenario{
		{name: "idempotent produce", steps: []step{
			{path: "init", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrInitProducerIDRequest()
				r.TransactionTimeoutMillis = 60000
				return r
			}, keep: keepProducer},
			{path: "first batch", req: producerProduce(cfIdem, 0, 0, false)},
			{path: "duplicate", req: producerProduce(cfIdem, 0, 0, false)},
			{path: "next batch", req: producerProduce(cfIdem, 2, 0, false)},
			{path: "sequence gap", req: producerProduce(cfIdem, 9, 0, false)},
			{path: "stale epoch", req: producerProduce(cfIdem, 4, -1, false)},
			{path: "future epoch, sequence not 0", req: producerProduce(cfIdem, 4, 1, false)},
			{path: "producers", eventually: true, req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrDescribeProducersRequest()
				rt := kmsg.NewDescribeProducersRequestTopic()
				rt.Topic = cfIdem
				rt.Partitions = []int32{0}
				r.Topics = append(r.Topics, rt)
				return r
			}},
		}},
		{name: "aborted transaction", steps: []step{
			{path: "init", req: func(t *target) kmsg.Request {
				r := kmsg.NewPtrInitProducerIDRequest()
				r.TransactionalID = kmsg.StringPtr(t.name("cf-txp"))
				r.TransactionTimeoutMillis = 60000
				return r
			}, keep: keepProducer},
			{path: "add partition", req: func(t *target) kmsg.Request {
				r := addPartitionsReq(cfTxp)(t).(*kmsg.AddPartitionsToTxnRequest)
				r.TransactionalID = t.name("cf-txp")
				r.Transactions[0].TransactionalID = r.TransactionalID
				return r
			}},
			{path: "transactional batch", req: producerProduce(cfTxp, 0, 0, true)},
			{path: "transactional batch outside a transaction's partitions", req: func(t *target) kmsg.Request {
				return producerProduce(cfIdem, 0, 0, true)(t)
			}},
			{path: "read committed while open", req: func(t *target) kmsg.Request {
				r := fetchReq(cfTxp, 0, 0)(t).(*kmsg.FetchRequest)
				r.IsolationLevel = 1
				r.MinBytes, r.MaxWaitMillis = 0, 0
				return r
			}},
			{path: "abort", req: func(t *target) kmsg.Request {
				r := endTxnReq(false, 0)(t).(*kmsg.EndTxnRequest)
				r.TransactionalID = t.name("cf-txp")
				return r
			}},
			// Kafka writes the abort marker after EndTxn answers.
			{path: "read committed after the abort", eventually: true, req: func(t *target) kmsg.Request {
				r := fetchReq(cfTxp, 0, 0)(t).(*kmsg.FetchRequest)
				r.IsolationLevel = 1
				return r
			}},
			{path: "read uncommitted after the abort", eventually: true, req: fetchReq(cfTxp, 0, 0)},
			{path: "latest committed offset", eventually: true, minVersion: 2, req: func(t *target) kmsg.Request {
				r := listOffsetsReq(cfTxp, 0, -1)(t).(*kmsg.ListOffsetsRequest)
				r.IsolationLevel = 1
				return r
			}},
		}},
	}
}
