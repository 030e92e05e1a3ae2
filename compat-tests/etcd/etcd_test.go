// Package etcd checks brokers that share an external etcd (etcd.endpoints)
// instead of embedding one: compat-tests/etcd/run.sh starts an etcd server
// from Debian's etcd-server package and two bin/strait processes pointed at
// it, then runs TestExternalEtcd against them. The brokers must form one
// cluster (both in Metadata, their registrations and the topic in that
// etcd), and an RF=2 topic must take acks=all writes and give every record
// back.
//
// The test runs only when STRAIT_ETCD_TEST=1 (run.sh, `make compat-etcd`):
// `go test ./...` skips it. run.sh passes the brokers as STRAIT_ETCD_BROKERS
// (host:port,host:port), the etcd client URL as STRAIT_ETCD_ENDPOINT, and
// the results file (client, test, pass|fail per line) as STRAIT_ETCD_RESULTS.
package etcd

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	clientv3 "go.etcd.io/etcd/client/v3"
)

const (
	client     = "external etcd"
	topic      = "etcd-rf2"
	partitions = 3
	records    = 3000
)

func TestExternalEtcd(t *testing.T) {
	if os.Getenv("STRAIT_ETCD_TEST") != "1" {
		t.Skip("runs with STRAIT_ETCD_TEST=1 against the brokers compat-tests/etcd/run.sh starts (make compat-etcd)")
	}
	brokers := strings.Split(os.Getenv("STRAIT_ETCD_BROKERS"), ",")
	endpoint := os.Getenv("STRAIT_ETCD_ENDPOINT")
	if len(brokers) != 2 || endpoint == "" {
		t.Fatalf("STRAIT_ETCD_BROKERS=%q STRAIT_ETCD_ENDPOINT=%q: want two brokers and an etcd URL", brokers, endpoint)
	}
	var rows strings.Builder
	defer func() {
		if path := os.Getenv("STRAIT_ETCD_RESULTS"); path != "" {
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			f.WriteString(rows.String())
		}
	}()
	// step runs one check as a subtest and records it; a failed step stops
	// the ones that need it.
	step := func(name string, fn func(t *testing.T)) {
		ok := t.Run(name, fn)
		st := "pass"
		if !ok {
			st = "fail"
		}
		fmt.Fprintf(&rows, "%s\t%s\t%s\n", client, name, st)
		if !ok {
			t.FailNow()
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	step("Metadata lists both brokers (one cluster)", func(t *testing.T) {
		var got []string
		eventually(t, "both brokers in Metadata", func() bool {
			md, err := adm.BrokerMetadata(ctx)
			if err != nil {
				return false
			}
			got = got[:0]
			for _, b := range md.Brokers {
				got = append(got, fmt.Sprintf("%d=%s:%d", b.NodeID, b.Host, b.Port))
			}
			slices.Sort(got)
			return len(md.Brokers) == 2 && md.Brokers[0].NodeID != md.Brokers[1].NodeID
		})
		t.Logf("brokers: %v", got)
	})

	step("brokers registered in the external etcd", func(t *testing.T) {
		resp, err := etcd.Get(ctx, "/strait/brokers/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, kv := range resp.Kvs {
			keys = append(keys, string(kv.Key))
		}
		if !slices.Contains(keys, "/strait/brokers/1") || !slices.Contains(keys, "/strait/brokers/2") {
			t.Fatalf("broker keys in etcd: %v, want /strait/brokers/1 and /strait/brokers/2", keys)
		}
	})

	step("create topic with replication factor 2", func(t *testing.T) {
		resp, err := adm.CreateTopic(ctx, partitions, 2, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "every partition on both brokers, both in the ISR", func() bool {
			md, err := adm.Metadata(ctx, topic)
			if err != nil {
				return false
			}
			ps := md.Topics[topic].Partitions
			if len(ps) != partitions {
				return false
			}
			for _, p := range ps {
				if p.Err != nil || len(p.Replicas) != 2 || len(p.ISR) != 2 || p.Leader < 0 {
					return false
				}
			}
			return true
		})
		resp2, err := etcd.Get(ctx, "/strait/topics/"+topic, clientv3.WithKeysOnly())
		if err != nil || len(resp2.Kvs) != 1 {
			t.Fatalf("topic key in the external etcd: %v, %v", resp2, err)
		}
	})

	acked := map[int32][]string{}
	step("produce with acks=all to the RF=2 topic", func(t *testing.T) {
		p, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		var rs []*kgo.Record
		for i := range records {
			rs = append(rs, &kgo.Record{Partition: int32(i % partitions), Value: fmt.Appendf(nil, "v%05d", i)})
		}
		for _, r := range p.ProduceSync(ctx, rs...) {
			if r.Err != nil {
				t.Fatalf("record %s: %v", r.Record.Value, r.Err)
			}
			acked[r.Record.Partition] = append(acked[r.Record.Partition], string(r.Record.Value))
		}
	})

	step("consume every record back in order", func(t *testing.T) {
		offsets := map[string]map[int32]kgo.Offset{topic: {}}
		for p := range int32(partitions) {
			offsets[topic][p] = kgo.NewOffset().AtStart()
		}
		c, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(offsets))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := map[int32][]string{}
		n := 0
		for n < records {
			fs := c.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %d of %d records", n, records)
			}
			fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s-%d: %v", tp, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				got[r.Partition] = append(got[r.Partition], string(r.Value))
				n++
			})
		}
		for p := range int32(partitions) {
			if !slices.Equal(got[p], acked[p]) {
				t.Errorf("partition %d: read %d records, %d acknowledged, or in another order", p, len(got[p]), len(acked[p]))
			}
		}
	})
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
