package broker_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeTopicPartitionsAllTopicsPages: with no topic named, pages of
// two partitions walk every topic once, in name order (a page reads only
// the topics it answers).
func TestDescribeTopicPartitionsAllTopicsPages(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	var want []string
	for i := range 7 {
		name := fmt.Sprintf("page-%d", i)
		n := int32(1)
		if i == 3 {
			n = 3
		}
		createTopic(t, cl, name, n, nil)
		for p := range n {
			want = append(want, fmt.Sprintf("%s/%d", name, p))
		}
	}
	var got []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for range 20 {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = 2
		req.Cursor = cursor
		resp, err := req.RequestWith(ctxFor(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				got = append(got, fmt.Sprintf("%s/%d", *rt.Topic, p.Partition))
				n++
			}
		}
		if n > 2 {
			t.Fatalf("a page of %d partitions, limit 2", n)
		}
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages walked %v\nwant %v", got, want)
	}
}
