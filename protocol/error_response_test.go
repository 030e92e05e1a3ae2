package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestErrorResponseProduce(t *testing.T) {
	body := kmsg.NewPtrProduceRequest()
	for _, name := range []string{"a", "b"} {
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = name
		for _, p := range []int32{0, 5} {
			pp := kmsg.NewProduceRequestTopicPartition()
			pp.Partition = p
			tp.Partitions = append(tp.Partitions, pp)
		}
		body.Topics = append(body.Topics, tp)
	}
	req := parsed(t, 0, 9, body)
	resp := ErrorResponse(req, 29).(*kmsg.ProduceResponse)
	if resp.Version != 9 || len(resp.Topics) != 2 || resp.Topics[1].Topic != "b" {
		t.Fatalf("%+v", resp)
	}
	for _, tp := range resp.Topics {
		if len(tp.Partitions) != 2 || tp.Partitions[1].Partition != 5 {
			t.Fatalf("partitions %+v", tp.Partitions)
		}
		for _, p := range tp.Partitions {
			if p.ErrorCode != 29 || p.BaseOffset != -1 || p.LogAppendTime != -1 {
				t.Fatalf("partition %+v", p)
			}
		}
	}
	// It encodes.
	if out := AppendResponse(nil, req, resp); len(out) < 20 {
		t.Fatal("short frame")
	}
}

func TestErrorResponseFetchByTopicID(t *testing.T) {
	body := kmsg.NewPtrFetchRequest()
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = [16]byte{7}
	for _, p := range []int32{3, 4} {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = p
		ft.Partitions = append(ft.Partitions, fp)
	}
	body.Topics = append(body.Topics, ft)
	req := parsed(t, 1, 13, body)
	resp := ErrorResponse(req, 3).(*kmsg.FetchResponse)
	if resp.ErrorCode != 3 || len(resp.Topics) != 1 || resp.Topics[0].TopicID != [16]byte{7} {
		t.Fatalf("%+v", resp)
	}
	for i, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 3 || p.Partition != int32(3+i) || p.RecordBatches == nil || len(p.RecordBatches) != 0 ||
			p.HighWatermark != -1 || p.LastStableOffset != -1 || p.LogStartOffset != -1 {
			t.Fatalf("partition %+v", p)
		}
	}
}

func TestErrorResponseScalarItems(t *testing.T) {
	// OffsetFetch v1: partitions are []int32 in the request, structs in the response.
	of := kmsg.NewPtrOffsetFetchRequest()
	oft := kmsg.NewOffsetFetchRequestTopic()
	oft.Topic = "t"
	oft.Partitions = []int32{2, 9}
	of.Topics = append(of.Topics, oft)
	ofr := ErrorResponse(parsed(t, 9, 1, of), 16).(*kmsg.OffsetFetchResponse)
	if len(ofr.Topics) != 1 || ofr.Topics[0].Topic != "t" || len(ofr.Topics[0].Partitions) != 2 ||
		ofr.Topics[0].Partitions[1].Partition != 9 || ofr.Topics[0].Partitions[1].ErrorCode != 16 {
		t.Fatalf("offset fetch %+v", ofr)
	}

	// DeleteTopics v1: TopicNames []string -> Topics with *string names.
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TopicNames = []string{"x", "y"}
	dtr := ErrorResponse(parsed(t, 20, 1, dt), 41).(*kmsg.DeleteTopicsResponse)
	if len(dtr.Topics) != 2 || dtr.Topics[1].Topic == nil || *dtr.Topics[1].Topic != "y" || dtr.Topics[1].ErrorCode != 41 {
		t.Fatalf("delete topics %+v", dtr)
	}

	// DescribeGroups: Groups []string -> Groups structs; the name must not land in ErrorMessage.
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g1"}
	dgr := ErrorResponse(parsed(t, 15, 5, dg), 15).(*kmsg.DescribeGroupsResponse)
	if len(dgr.Groups) != 1 || dgr.Groups[0].Group != "g1" || dgr.Groups[0].ErrorCode != 15 {
		t.Fatalf("describe groups %+v", dgr)
	}

	// FindCoordinator v4: CoordinatorKeys -> Coordinators.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"k1", "k2"}
	fcr := ErrorResponse(parsed(t, 10, 4, fc), 15).(*kmsg.FindCoordinatorResponse)
	if len(fcr.Coordinators) != 2 || fcr.Coordinators[0].Key != "k1" || fcr.Coordinators[1].ErrorCode != 15 {
		t.Fatalf("find coordinator %+v", fcr)
	}
	// FindCoordinator v2: top-level error only.
	fc2 := kmsg.NewPtrFindCoordinatorRequest()
	fc2.CoordinatorKey = "g"
	if r := ErrorResponse(parsed(t, 10, 2, fc2), 15).(*kmsg.FindCoordinatorResponse); r.ErrorCode != 15 {
		t.Fatalf("find coordinator v2 %+v", r)
	}
}

func TestErrorResponseEveryKeyEncodes(t *testing.T) {
	// Must not panic for any served key at any version, and must encode.
	for key, vr := range KafkaVersions {
		for v := vr.acceptedMin(); v <= vr.Max; v++ {
			body := kmsg.RequestForKey(key)
			body.SetVersion(v)
			req := &Request{Key: key, Version: v, CorrelationID: 1, Body: body}
			resp := ErrorResponse(req, 87)
			if resp.Key() != key || resp.GetVersion() != v {
				t.Fatalf("key %d v%d: got key %d v%d", key, v, resp.Key(), resp.GetVersion())
			}
			_ = AppendResponse(nil, req, resp)
		}
	}
}
