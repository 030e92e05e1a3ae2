package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
)

// TestParkedFetchSeesWholeProduceRequest: a fetch parked on two partitions
// (max_wait 10 s) is woken by a produce request to both, well before
// max_wait, and its answer carries the records of both: the wake comes once
// the request's appends are all done (replication's
// TestAppendedNoWakeLeavesFetchesParked pins that the appends themselves do
// not wake). The produce is answered too.
func TestParkedFetchSeesWholeProduceRequest(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	createTopic(t, cl, "wake", 2, nil)
	cl.Close()
	fc, pc := dialRaw(t, srv), dialRaw(t, srv)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.ReplicaID = -1
	fetch.MaxWaitMillis = 10000
	fetch.MinBytes = 1
	fetch.MaxBytes = 1 << 20
	fetch.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "wake"
	for p := range int32(2) {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = p
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
	}
	fetch.Topics = append(fetch.Topics, ft)
	fc.send(encodeRequest(fetch, 1))
	for deadline := time.Now().Add(10 * time.Second); broker.ParkedFetches(srv) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the fetch never parked")
		}
	}

	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	produce.Acks = 1
	produce.TimeoutMillis = 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "wake"
	for p := range int32(2) {
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition = p
		pp.Records = recordBatch([]byte("to both"))
		pt.Partitions = append(pt.Partitions, pp)
	}
	produce.Topics = append(produce.Topics, pt)
	sent := time.Now()
	pc.send(encodeRequest(produce, 2))

	_, body, err := pc.readResponse()
	if err != nil {
		t.Fatal(err)
	}
	presp := kmsg.NewPtrProduceResponse()
	presp.SetVersion(9)
	if err := presp.ReadFrom(body[1:]); err != nil { // past the header's tags
		t.Fatal(err)
	}
	for _, sp := range presp.Topics[0].Partitions {
		if sp.ErrorCode != 0 {
			t.Fatalf("produce to partition %d: error code %d", sp.Partition, sp.ErrorCode)
		}
	}
	_, body, err = fc.readResponse()
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(sent); d > 5*time.Second {
		t.Fatalf("the fetch answered %v after the produce: it was not woken", d)
	}
	fresp := kmsg.NewPtrFetchResponse()
	fresp.SetVersion(12)
	if err := fresp.ReadFrom(body[1:]); err != nil {
		t.Fatal(err)
	}
	if len(fresp.Topics) != 1 || len(fresp.Topics[0].Partitions) != 2 {
		t.Fatalf("fetch answered %+v, want one topic of two partitions", fresp.Topics)
	}
	for _, fp := range fresp.Topics[0].Partitions {
		if fp.ErrorCode != 0 || fp.HighWatermark != 1 || len(fp.RecordBatches) == 0 {
			t.Errorf("partition %d: error %d, high watermark %d, %d bytes of records; want the produced record",
				fp.Partition, fp.ErrorCode, fp.HighWatermark, len(fp.RecordBatches))
		}
	}
}
