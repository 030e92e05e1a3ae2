package broker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestElectLeadersSingleBroker: on one broker every partition is led by its
// preferred replica, so Kafka answers ELECTION_NOT_NEEDED for named
// partitions, lists every topic with no partitions for a null list, and
// reports unknown topics and partitions and unknown election types.
func TestElectLeadersSingleBroker(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	ctx := context.Background()
	createTopic(t, cl, "el", 2, nil)
	createTopic(t, cl, "el2", 1, nil)

	elect := func(v int16, typ int8, topics map[string][]int32, order ...string) *kmsg.ElectLeadersResponse {
		t.Helper()
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version, req.ElectionType, req.TimeoutMillis = v, typ, 5000
		if topics != nil {
			req.Topics = []kmsg.ElectLeadersRequestTopic{}
			for _, name := range order {
				rt := kmsg.NewElectLeadersRequestTopic()
				rt.Topic, rt.Partitions = name, topics[name]
				req.Topics = append(req.Topics, rt)
			}
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	type result struct {
		code int16
		msg  string
	}
	results := func(resp *kmsg.ElectLeadersResponse) map[string]map[int32]result {
		out := map[string]map[int32]result{}
		for _, rt := range resp.Topics {
			out[rt.Topic] = map[int32]result{}
			for _, p := range rt.Partitions {
				out[rt.Topic][p.Partition] = result{p.ErrorCode, deref(p.ErrorMessage)}
			}
		}
		return out
	}
	notNeeded := result{kerr.ElectionNotNeeded.Code, "Leader election not needed for topic partition."}

	for v := int16(0); v <= 2; v++ {
		for _, typ := range []int8{0, 1} {
			if v == 0 && typ == 1 {
				continue // v0 has no election type
			}
			resp := elect(v, typ, map[string][]int32{"el": {0, 1, 5}, "nope": {0}}, "el", "nope")
			if resp.ErrorCode != 0 || len(resp.Topics) != 2 || resp.Topics[0].Topic != "el" || resp.Topics[1].Topic != "nope" {
				t.Fatalf("v%d type %d: %+v", v, typ, resp)
			}
			got := results(resp)
			if got["el"][0] != notNeeded || got["el"][1] != notNeeded {
				t.Errorf("v%d type %d: preferred leaders: %+v", v, typ, got["el"])
			}
			if r := got["el"][5]; r != (result{kerr.UnknownTopicOrPartition.Code, "No such partition as el-5"}) {
				t.Errorf("v%d type %d: unknown partition: %+v", v, typ, r)
			}
			if r := got["nope"][0]; r != (result{kerr.UnknownTopicOrPartition.Code, "No such topic as nope"}) {
				t.Errorf("v%d type %d: unknown topic: %+v", v, typ, r)
			}

			// Null: every topic listed, nothing needing an election.
			resp = elect(v, typ, nil)
			all := results(resp)
			if resp.ErrorCode != 0 || len(all["el"]) != 0 || len(all["el2"]) != 0 {
				t.Errorf("v%d type %d, every partition: %+v", v, typ, resp)
			}
			if _, ok := all["el"]; !ok {
				t.Errorf("v%d type %d, every partition: topic el not listed: %+v", v, typ, resp.Topics)
			}
		}
	}

	// An unknown election type fails the request, and Kafka's error
	// response repeats the error on every named partition.
	resp := elect(2, 9, map[string][]int32{"el": {0, 1}}, "el")
	if resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("unknown election type: top-level code %d", resp.ErrorCode)
	}
	if got := results(resp)["el"]; len(got) != 2 || got[1] != (result{kerr.InvalidRequest.Code, "Unknown election type 9"}) {
		t.Errorf("unknown election type: partitions %+v", got)
	}

	// kadm surfaces ELECTION_NOT_NEEDED per partition.
	set := kadm.TopicsSet{}
	set.Add("el", 0)
	er, err := kadm.NewClient(cl).ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		t.Fatal(err)
	}
	if r := er["el"][0]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
		t.Errorf("kadm ElectLeaders: %+v", r)
	}
}
