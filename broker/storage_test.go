package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
	"github.com/strait/strait/storage"
)

func startBrokerFS(t *testing.T, dir string, fs storage.FS) *broker.Server {
	t.Helper()
	cfg, _, err := config.Parse(map[string]string{
		"listeners": "PLAINTEXT://127.0.0.1:0",
		"log.dirs":  dir + "/logs",
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.StorageFS = fs
	srv, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestDiskFullGivesStorageError: once the disk is full, produce to the
// partition fails with KAFKA_STORAGE_ERROR, the broker keeps serving, and
// every record acknowledged before is still readable, also after a restart.
func TestDiskFullGivesStorageError(t *testing.T) {
	dir := t.TempDir()
	fault := storage.NewFaultFS(nil)
	srv := startBrokerFS(t, dir, fault)
	cl := newClient(t, srv, kgo.DefaultProduceTopic("full"), kgo.DisableIdempotentWrite(), kgo.RecordRetries(0),
		kgo.MaxVersions(byNameVersions())) // a raw produce by topic name
	createTopic(t, cl, "full", 1, nil)
	before := testRecords("full", 500)
	produceAll(t, cl, before)

	fault.SetWriteBudget(10) // the next batch tears and then ENOSPC
	req := produceRequest(t, "full", 0, 1)
	req.Acks = -1
	for i := 0; i < 3; i++ {
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatalf("produce on a full disk: %v", err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
			t.Fatalf("error code %d on a full disk, want KAFKA_STORAGE_ERROR", code)
		}
		req = produceRequest(t, "full", 0, int32(i+2))
		req.Acks = -1
	}
	// Other requests keep working and the acknowledged records are intact.
	if _, err := kadm.NewClient(cl).ListTopics(context.Background()); err != nil {
		t.Fatalf("metadata after disk full: %v", err)
	}
	checkRecords(t, before, consumeAll(t, srv, "full", len(before)))

	fault.SetWriteBudget(-1)
	srv.Close()
	srv = startBrokerFS(t, dir, nil)
	defer srv.Close()
	checkRecords(t, before, consumeAll(t, srv, "full", len(before)))
	cl2 := newClient(t, srv, kgo.DefaultProduceTopic("full"))
	produceAll(t, cl2, []*kgo.Record{{Value: []byte("after")}})
	got := consumeAll(t, srv, "full", len(before)+1)
	if last := got[len(got)-1]; string(last.Value) != "after" || last.Offset != int64(len(before)) {
		t.Fatalf("after restart: last record %q at %d, want \"after\" at %d", last.Value, last.Offset, len(before))
	}
}

// TestDeleteRecordsMovesLogStart: DeleteRecords moves the log start offset;
// ListOffsets earliest follows it, a fetch below it is OFFSET_OUT_OF_RANGE,
// and an offset above the high watermark is refused.
func TestDeleteRecordsMovesLogStart(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv, kgo.DefaultProduceTopic("trim"))
	createTopic(t, cl, "trim", 1, nil)
	recs := testRecords("trim", 100)
	produceAll(t, cl, recs)
	adm := kadm.NewClient(cl)
	ctx := context.Background()

	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 40})
	res, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := res.Lookup("trim", 0)
	if r.Err != nil || r.LowWatermark != 40 {
		t.Fatalf("delete records: low watermark %d err %v, want 40", r.LowWatermark, r.Err)
	}
	start, err := adm.ListStartOffsets(ctx, "trim")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := start.Lookup("trim", 0); o.Offset != 40 {
		t.Fatalf("earliest offset %d after DeleteRecords, want 40", o.Offset)
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "trim"
	topics, err := adm.ListTopics(ctx, "trim")
	if err != nil {
		t.Fatal(err)
	}
	ft.TopicID = topics["trim"].ID // the client sends the newest version, which names topics by id
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset = 10
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fresp, err := fetch.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := fresp.Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch below the log start offset: code %d, want OFFSET_OUT_OF_RANGE", code)
	}

	offs = kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 1000})
	res, err = adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("trim", 0); r.Err != kerr.OffsetOutOfRange {
		t.Fatalf("delete above the high watermark: %v, want OFFSET_OUT_OF_RANGE", r.Err)
	}
	// The records from the new start on are still served.
	cons := newClient(t, srv, kgo.ConsumeTopics("trim"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	fs := cons.PollFetches(cctx)
	if rs := fs.Records(); len(rs) == 0 || rs[0].Offset != 40 {
		t.Fatalf("first record after DeleteRecords: %v", rs)
	}
}

// TestProduceToInternalTopicRefused: clients cannot append to
// __consumer_offsets directly (INVALID_TOPIC_EXCEPTION), as in Kafka.
func TestProduceToInternalTopicRefused(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv, kgo.ConsumerGroup("makes-offsets-topic"), kgo.ConsumeTopics("nothing"),
		kgo.MaxVersions(byNameVersions())) // a raw produce by topic name
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Creating the group's coordinator creates __consumer_offsets.
	for _, r := range kadm.NewClient(cl).FindGroupCoordinators(ctx, "makes-offsets-topic") {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	req := produceRequest(t, "__consumer_offsets", 0, 1)
	req.Acks = -1
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidTopicException.Code {
		t.Fatalf("produce to __consumer_offsets: code %d, want INVALID_TOPIC_EXCEPTION", code)
	}
}
