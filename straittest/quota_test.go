package straittest_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/straittest"
)

// A client quota altered through one broker is seen by every broker's watch
// cache: the other describes it, without a restart.
func TestClientQuotaSeenByEveryBroker(t *testing.T) {
	c := straittest.StartCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b1, b2 := c.Brokers()[0], c.Brokers()[1]
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	request := func(b *straittest.Broker, req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := cl.Broker(int(b.ID())).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	name := "alice"
	alter.Entries = []kmsg.AlterClientQuotasRequestEntry{{
		Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: &name}},
		Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1024}},
	}}
	if r := request(b1, alter).(*kmsg.AlterClientQuotasResponse); len(r.Entries) != 1 || r.Entries[0].ErrorCode != 0 {
		t.Fatalf("alter on broker %d: %+v", b1.ID(), r)
	}
	describe := kmsg.NewPtrDescribeClientQuotasRequest()
	for i := 0; ; i++ {
		r := request(b2, describe).(*kmsg.DescribeClientQuotasResponse)
		if r.ErrorCode != 0 {
			t.Fatalf("describe on broker %d: error %d", b2.ID(), r.ErrorCode)
		}
		if len(r.Entries) == 1 && len(r.Entries[0].Values) == 1 && r.Entries[0].Values[0].Value == 1024 {
			return
		}
		// The watch delivers the change shortly after the write.
		if i == 100 || ctx.Err() != nil {
			t.Fatalf("broker %d never showed the quota: %+v", b2.ID(), r.Entries)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
