package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
)

// TestCreateTopicsValidation: Kafka's error codes for bad partition counts,
// replication factors above the live brokers, bad configs, bad names,
// duplicates and existing topics; validate_only creates nothing.
func TestCreateTopicsValidation(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	ctx := context.Background()
	create := func(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsResponse {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 5000
		req.ValidateOnly = validateOnly
		req.Topics = topics
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	topic := func(name string, parts int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
		for i := 0; i+1 < len(configs); i += 2 {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
			rt.Configs = append(rt.Configs, c)
		}
		return rt
	}
	cases := []struct {
		name string
		rt   kmsg.CreateTopicsRequestTopic
		want *kerr.Error
	}{
		{"zero partitions", topic("t-zero", 0, 1), kerr.InvalidPartitions},
		{"rf above live brokers", topic("t-rf", 1, 3), kerr.InvalidReplicationFactor},
		{"unknown config", topic("t-cfg", 1, 1, "no.such.config", "1"), kerr.InvalidConfig},
		{"bad config value", topic("t-cfg2", 1, 1, "retention.ms", "soon"), kerr.InvalidConfig},
		{"bad name", topic("bad/name", 1, 1), kerr.InvalidTopicException},
		{"defaults", topic("t-defaults", -1, -1), nil},
	}
	for _, c := range cases {
		resp := create(false, c.rt)
		got := kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		if !errors.Is(got, c.want) && !(got == nil && c.want == nil) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	if resp := create(false, topic("t-defaults", 1, 1)); resp.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Errorf("existing topic: code %d", resp.Topics[0].ErrorCode)
	}
	resp := create(false, topic("t-dup", 1, 1), topic("t-dup", 1, 1))
	for _, rt := range resp.Topics {
		if rt.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("duplicate topic in one request: code %d, want INVALID_REQUEST", rt.ErrorCode)
		}
	}
	if resp := create(true, topic("t-validate", 4, 1)); resp.Topics[0].ErrorCode != 0 || resp.Topics[0].NumPartitions != 4 {
		t.Errorf("validate only: %+v", resp.Topics[0])
	}
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("t-validate") || topics.Has("t-dup") || topics.Has("t-zero") {
		t.Errorf("topics created that must not exist: %v", topics.Names())
	}
	if d := topics["t-defaults"]; len(d.Partitions) != 1 || d.ID == [16]byte{} {
		t.Errorf("topic with default counts: %+v", d)
	}
}

// TestDeleteTopicsByNameAndID deletes one topic by name and one by id; their
// logs go, a later Metadata does not show them, and a recreated topic of the
// same name starts empty with a new id.
func TestDeleteTopicsByNameAndID(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv, kgo.DefaultProduceTopic("del-a"))
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	createTopic(t, cl, "del-a", 2, nil)
	createTopic(t, cl, "del-b", 1, nil)
	produceAll(t, cl, testRecords("del-a", 10))
	before, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := adm.DeleteTopics(ctx, "del-a"); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 5000
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.TopicID = before["del-b"].ID
	req.Topics = append(req.Topics, dt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Topics[0]; r.ErrorCode != 0 || r.Topic == nil || *r.Topic != "del-b" {
		t.Fatalf("delete by id: %+v", r)
	}
	resp, err = req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Topics[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("deleting a deleted id: code %d, want UNKNOWN_TOPIC_ID", resp.Topics[0].ErrorCode)
	}
	// A fresh client: kadm may answer from the first client's cached metadata.
	fresh := kadm.NewClient(newClient(t, srv))
	after, err := fresh.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"del-a", "del-b"} {
		if d, ok := after[name]; ok && d.Err == nil {
			t.Fatalf("deleted topic %s still listed: %+v", name, d)
		}
	}
	createTopic(t, cl, "del-a", 1, nil)
	again, err := adm.ListEndOffsets(ctx, "del-a")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := again.Lookup("del-a", 0); o.Offset != 0 {
		t.Fatalf("recreated topic has end offset %d, want 0", o.Offset)
	}
	now, _ := fresh.ListTopics(ctx, "del-a")
	if now["del-a"].ID == before["del-a"].ID {
		t.Fatal("recreated topic kept the old topic id")
	}
}

// TestMetadataAutoCreate: a produce to an unknown topic creates it with
// num.partitions; with auto.create.topics.enable=false it stays unknown.
func TestMetadataAutoCreate(t *testing.T) {
	srv := startBroker(t, t.TempDir(), "num.partitions", "4")
	cl := newClient(t, srv, kgo.DefaultProduceTopic("auto"), kgo.AllowAutoTopicCreation())
	produceAll(t, cl, []*kgo.Record{{Value: []byte("x")}})
	topics, err := kadm.NewClient(cl).ListTopics(context.Background(), "auto")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(topics["auto"].Partitions); n != 4 {
		t.Fatalf("auto-created topic has %d partitions, want 4", n)
	}
	srv.Close()

	srv = startBroker(t, t.TempDir(), "auto.create.topics.enable", "false")
	defer srv.Close()
	cl = newClient(t, srv)
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("nope")}}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("code %d with auto-creation off, want UNKNOWN_TOPIC_OR_PARTITION", resp.Topics[0].ErrorCode)
	}
}

// TestListOffsetsByTimestamp: earliest, latest, max timestamp and lookups by
// timestamp through the time index.
func TestListOffsetsByTimestamp(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv, kgo.DefaultProduceTopic("ts"), kgo.ProducerLinger(0))
	createTopic(t, cl, "ts", 1, nil)
	base := time.UnixMilli(1_700_000_000_000)
	for i := 0; i < 50; i++ {
		// One batch per record, timestamps 10 ms apart; record 30 is the max.
		ts := base.Add(time.Duration(i) * 10 * time.Millisecond)
		if i == 30 {
			ts = base.Add(time.Hour)
		}
		produceAll(t, cl, []*kgo.Record{{Value: []byte{byte(i)}, Timestamp: ts}})
	}
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	lookup := func(ts int64) (int64, int64) {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "ts"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rp.CurrentLeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("list offsets %d: code %d", ts, p.ErrorCode)
		}
		return p.Offset, p.Timestamp
	}
	if o, _ := lookup(-2); o != 0 {
		t.Errorf("earliest: %d", o)
	}
	if o, _ := lookup(-1); o != 50 {
		t.Errorf("latest: %d", o)
	}
	if o, ts := lookup(-3); o != 30 || ts != base.Add(time.Hour).UnixMilli() {
		t.Errorf("max timestamp: offset %d ts %d", o, ts)
	}
	if o, ts := lookup(base.Add(205 * time.Millisecond).UnixMilli()); o != 21 || ts != base.Add(210*time.Millisecond).UnixMilli() {
		t.Errorf("by timestamp: offset %d ts %d, want 21", o, ts)
	}
	if o, _ := lookup(base.Add(2 * time.Hour).UnixMilli()); o != -1 {
		t.Errorf("after every timestamp: offset %d, want -1", o)
	}
	offs, err := adm.ListOffsetsAfterMilli(ctx, base.UnixMilli(), "ts")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("ts", 0); o.Offset != 0 {
		t.Errorf("kadm by time: %d", o.Offset)
	}
}

// TestFetchLongPollWokenByAppend: a fetch waiting for data (min_bytes 1,
// max_wait 10 s) returns as soon as a record is produced, not at max_wait.
func TestFetchLongPollWokenByAppend(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv, kgo.DefaultProduceTopic("poll"))
	createTopic(t, cl, "poll", 1, nil)
	cons := newClient(t, srv, kgo.ConsumeTopics("poll"), kgo.FetchMaxWait(10*time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := make(chan time.Time, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for {
			fs := cons.PollFetches(ctx)
			if len(fs.Records()) > 0 || ctx.Err() != nil {
				got <- time.Now()
				return
			}
		}
	}()
	time.Sleep(500 * time.Millisecond) // let the fetch park
	sent := time.Now()
	produceAll(t, cl, []*kgo.Record{{Value: []byte("wake")}})
	at := <-got
	// Well under the 10 s max_wait: the append woke the parked fetch.
	if d := at.Sub(sent); d > 5*time.Second {
		t.Fatalf("record arrived %v after the produce: the fetch was not woken", d)
	}
}

// TestTwoBrokersSideBySide: two brokers configured with nothing but their own
// listeners and log dirs run at once, each a cluster of its own.
func TestTwoBrokersSideBySide(t *testing.T) {
	a := startBroker(t, t.TempDir())
	defer a.Close()
	b := startBroker(t, t.TempDir())
	defer b.Close()
	if a.ClusterID() == b.ClusterID() {
		t.Fatal("two independent brokers share a cluster id")
	}
	for i, srv := range []*broker.Server{a, b} {
		cl := newClient(t, srv, kgo.DefaultProduceTopic("side"))
		createTopic(t, cl, "side", 1, nil)
		produceAll(t, cl, []*kgo.Record{{Value: []byte{byte(i)}}})
		if got := consumeAll(t, srv, "side", 1); got[0].Value[0] != byte(i) {
			t.Fatalf("broker %d served another broker's record", i)
		}
	}
}
