package protocol

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestFrame builds a frame (without size prefix): header v1 or v2 with the
// given client id and raw header tag section (v2 only), then body.
func requestFrame(key, version int16, correlationID int32, clientID *string, headerVersion int16, headerTags []byte, body []byte) []byte {
	b := kbin.AppendInt16(nil, key)
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, correlationID)
	if headerVersion >= 1 {
		b = kbin.AppendNullableString(b, clientID) // never compact, even in v2
	}
	if headerVersion >= 2 {
		if headerTags == nil {
			headerTags = []byte{0}
		}
		b = append(b, headerTags...)
	}
	return append(b, body...)
}

func strPtr(s string) *string { return &s }

func metadataBody(version int16) []byte {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(version)
	for _, name := range []string{"orders", "payments"} {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = strPtr(name)
		req.Topics = append(req.Topics, t)
	}
	return req.AppendTo(nil)
}

func TestParseRequestHeaderV1(t *testing.T) {
	frame := requestFrame(3, 4, 77, strPtr("cli"), 1, nil, metadataBody(4))
	req, err := ParseRequest(frame, KafkaVersions, nil)
	if err != nil {
		t.Fatal(err)
	}
	if req.Key != 3 || req.Version != 4 || req.CorrelationID != 77 || req.HeaderVersion != 1 ||
		req.ClientID == nil || *req.ClientID != "cli" || req.UnsupportedVersion {
		t.Fatalf("header %+v", req)
	}
	body, ok := req.Body.(*kmsg.MetadataRequest)
	if !ok || body.Version != 4 || len(body.Topics) != 2 || *body.Topics[1].Topic != "payments" {
		t.Fatalf("body %+v", req.Body)
	}
}

func TestParseRequestHeaderV2TaggedFieldsNullClientID(t *testing.T) {
	// Two header tags: 0 with 3 bytes, 300 (two-byte varint) with 0 bytes.
	tags := []byte{2, 0, 3, 'a', 'b', 'c', 0xac, 0x02, 0}
	frame := requestFrame(3, 12, -5, nil, 2, tags, metadataBody(12))
	req, err := ParseRequest(frame, KafkaVersions, nil)
	if err != nil {
		t.Fatal(err)
	}
	if req.HeaderVersion != 2 || req.ClientID != nil || req.ClientIDString() != "" || req.CorrelationID != -5 {
		t.Fatalf("header %+v", req)
	}
	body := req.Body.(*kmsg.MetadataRequest)
	if len(body.Topics) != 2 || *body.Topics[0].Topic != "orders" {
		t.Fatalf("body after tagged header decoded wrongly: %+v", body)
	}
}

func TestParseRequestTrailingBytesIgnored(t *testing.T) {
	frame := append(requestFrame(3, 4, 1, strPtr("c"), 1, nil, metadataBody(4)), 1, 2, 3)
	if _, err := ParseRequest(frame, KafkaVersions, nil); err != nil {
		t.Fatalf("trailing bytes: %v (Kafka ignores them)", err)
	}
}

func TestParseRequestUnknownKey(t *testing.T) {
	table := VersionTable{3: KafkaVersions[3]}
	for _, key := range []int16{9999, -1, 0} { // 0 is known to kmsg but not served
		_, err := ParseRequest(requestFrame(key, 0, 9, nil, 1, nil, nil), table, nil)
		var unknown *UnknownKeyError
		if !errors.As(err, &unknown) || unknown.Key != key || unknown.CorrelationID != 9 {
			t.Fatalf("key %d: err %v, want UnknownKeyError", key, err)
		}
	}
}

func TestParseRequestUnsupportedVersion(t *testing.T) {
	for _, c := range []struct{ key, version, min, max int16 }{
		{0, 2, 3, 13},   // Produce v0-2: advertised, refused (KAFKA-18659)
		{0, 0, 3, 13},   //
		{1, 3, 4, 18},   // Fetch below the KIP-896 floor
		{3, 14, 0, 13},  // Metadata above max
		{3, -1, 0, 13},  // negative
		{19, 1, 2, 7},   // CreateTopics v1 removed
		{20, 99, 1, 6},  // far above
		{0, 14, 3, 13},  // Produce above max
		{1, 19, 4, 18},  // Fetch above max
		{2, 0, 1, 11},   // ListOffsets v0 removed
		{8, 1, 2, 10},   // OffsetCommit v1 removed
		{23, 1, 2, 4},   // OffsetForLeaderEpoch v1 removed
		{27, 0, 1, 2},   // WriteTxnMarkers v0 removed
		{35, 0, 1, 5},   // DescribeLogDirs v0 removed
		{29, 0, 1, 3},   // DescribeAcls v0 removed
		{9, 0, 1, 10},   // OffsetFetch v0 removed
		{41, 0, 1, 3},   // DescribeDelegationToken v0 removed
		{34, 0, 1, 2},   // AlterReplicaLogDirs v0 removed
		{32, 0, 1, 4},   // DescribeConfigs v0 removed
		{38, 0, 1, 3},   // CreateDelegationToken v0 removed
		{39, 0, 1, 2},   // RenewDelegationToken v0 removed
		{40, 0, 1, 2},   // ExpireDelegationToken v0 removed
		{30, 0, 1, 3},   // CreateAcls v0 removed
		{31, 0, 1, 3},   // DeleteAcls v0 removed
		{20, 0, 1, 6},   // DeleteTopics v0 removed
		{19, 0, 2, 7},   // CreateTopics v0 removed
		{8, 0, 2, 10},   // OffsetCommit v0
		{23, 0, 2, 4},   // OffsetForLeaderEpoch v0
		{1, 0, 4, 18},   // Fetch v0
		{0, 1, 3, 13},   // Produce v1
		{3, 100, 0, 13}, // Metadata v100
	} {
		_, err := ParseRequest(requestFrame(c.key, c.version, 4, strPtr("x"), 1, nil, nil), KafkaVersions, nil)
		var unsupported *UnsupportedVersionError
		if !errors.As(err, &unsupported) || unsupported.Key != c.key || unsupported.Version != c.version ||
			unsupported.Min != c.min || unsupported.Max != c.max || unsupported.CorrelationID != 4 {
			t.Fatalf("key %d v%d: err %v, want UnsupportedVersionError %d-%d", c.key, c.version, err, c.min, c.max)
		}
	}
}

func TestParseRequestProduceV3Accepted(t *testing.T) {
	body := kmsg.NewPtrProduceRequest()
	body.SetVersion(3)
	body.Acks = -1
	req, err := ParseRequest(requestFrame(0, 3, 1, strPtr("p"), 1, nil, body.AppendTo(nil)), KafkaVersions, nil)
	if err != nil || req.Body.(*kmsg.ProduceRequest).Acks != -1 {
		t.Fatalf("produce v3: %v", err)
	}
}

func TestParseRequestMalformedHeader(t *testing.T) {
	valid := requestFrame(3, 12, 1, strPtr("client"), 2, []byte{1, 7, 2, 'h', 'i'}, metadataBody(12))
	if _, err := ParseRequest(valid, KafkaVersions, nil); err != nil {
		t.Fatal(err)
	}
	headerLen := 8 + 2 + len("client") + 5
	for n := 0; n < headerLen; n++ {
		_, err := ParseRequest(valid[:n], KafkaVersions, nil)
		var malformed *MalformedRequestError
		if !errors.As(err, &malformed) || malformed.Part != "header" {
			t.Fatalf("header cut at %d: err %v, want malformed header", n, err)
		}
	}
	bad := map[string][]byte{
		"client id longer than frame": requestFrame(3, 4, 1, nil, 1, nil, nil)[:8],
		"tag size past end":           requestFrame(3, 12, 1, nil, 2, []byte{1, 0, 50, 'x'}, nil),
		"tag count past end":          requestFrame(3, 12, 1, nil, 2, []byte{3, 0, 0}, nil),
		"varint overflow":             requestFrame(3, 12, 1, nil, 2, []byte{0xff, 0xff, 0xff, 0xff, 0x7f}, nil),
		"varint too long":             requestFrame(3, 12, 1, nil, 2, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, nil),
		"huge tag size":               requestFrame(3, 12, 1, nil, 2, []byte{1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, nil),
	}
	bad["client id longer than frame"] = append(bad["client id longer than frame"], 0x7f, 0xff, 'a')
	for name, frame := range bad {
		_, err := ParseRequest(frame, KafkaVersions, nil)
		var malformed *MalformedRequestError
		if !errors.As(err, &malformed) || malformed.Part != "header" {
			t.Fatalf("%s: err %v, want malformed header", name, err)
		}
	}
}

func TestParseRequestMalformedBody(t *testing.T) {
	body := metadataBody(4)
	for n := 0; n < len(body); n++ {
		_, err := ParseRequest(requestFrame(3, 4, 1, nil, 1, nil, body[:n]), KafkaVersions, nil)
		var malformed *MalformedRequestError
		if !errors.As(err, &malformed) || malformed.Part != "body" {
			t.Fatalf("body cut at %d of %d: err %v, want malformed body", n, len(body), err)
		}
	}
	// An array count far beyond the frame must fail without allocating it.
	huge := kbin.AppendInt32(nil, 1<<30)
	_, err := ParseRequest(requestFrame(3, 4, 1, nil, 1, nil, huge), KafkaVersions, nil)
	var malformed *MalformedRequestError
	if !errors.As(err, &malformed) {
		t.Fatalf("huge array count: err %v", err)
	}
}

func TestParseRequestUnsupportedApiVersions(t *testing.T) {
	for _, v := range []int16{6, 127, -1} {
		// v6 and up have a v2 header; the body is never looked at.
		hv := int16(1)
		if v >= 3 {
			hv = 2
		}
		frame := requestFrame(18, v, 42, strPtr("new-client"), hv, nil, []byte{0xde, 0xad})
		req, err := ParseRequest(frame, KafkaVersions, nil)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if !req.UnsupportedVersion || req.Version != v || req.Body.GetVersion() != 0 || req.HeaderVersion != hv {
			t.Fatalf("v%d: %+v", v, req)
		}
		out := AppendResponse(nil, req, ApiVersionsResponse(req, KafkaVersions, Kafka44Features(0)))
		// size, correlation id, no header tags (v0 header), v0 body.
		if int(int32(be32(out))) != len(out)-4 || int32(be32(out[4:])) != 42 {
			t.Fatalf("v%d: frame %x", v, out)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(0)
		if err := resp.ReadFrom(out[8:]); err != nil {
			t.Fatalf("v%d: decode v0: %v", v, err)
		}
		if resp.ErrorCode != 35 || len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 ||
			resp.ApiKeys[0].MinVersion != 0 || resp.ApiKeys[0].MaxVersion != 5 {
			t.Fatalf("v%d: response %+v", v, resp)
		}
		want := []byte{0, 35, 0, 0, 0, 1, 0, 18, 0, 0, 0, 5}
		if !bytes.Equal(out[8:], want) {
			t.Fatalf("v%d: body %x, want %x", v, out[8:], want)
		}
	}
	// A truncated header still fails, even for ApiVersions.
	frame := requestFrame(18, 9, 42, strPtr("new-client"), 2, nil, nil)
	if _, err := ParseRequest(frame[:len(frame)-1], KafkaVersions, nil); err == nil {
		t.Fatal("ApiVersions with truncated header accepted")
	}
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func FuzzParseRequest(f *testing.F) {
	f.Add(requestFrame(3, 4, 1, strPtr("c"), 1, nil, metadataBody(4)))
	f.Add(requestFrame(3, 12, 1, nil, 2, []byte{1, 0, 1, 'x'}, metadataBody(12)))
	f.Add(requestFrame(18, 3, 1, strPtr("c"), 2, nil, []byte{2, 'a', 2, 'b', 0}))
	f.Add(requestFrame(18, 9, 1, strPtr("c"), 2, nil, nil))
	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "t"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = []byte{1, 2, 3}
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	f.Add(requestFrame(0, 9, 1, strPtr("c"), 2, nil, produce.AppendTo(nil)))
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(13)
	ft := kmsg.NewFetchRequestTopic()
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	fetch.Topics = append(fetch.Topics, ft)
	f.Add(requestFrame(1, 13, 1, strPtr("c"), 2, nil, fetch.AppendTo(nil)))
	f.Add([]byte{})
	f.Add([]byte{0, 3, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff})

	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := ParseRequest(frame, KafkaVersions, nil)
		if err != nil {
			return
		}
		vr := KafkaVersions[req.Key]
		if req.Body == nil || req.Body.Key() != req.Key {
			t.Fatalf("accepted request without matching body: %+v", req)
		}
		if !req.UnsupportedVersion && (req.Version < vr.acceptedMin() || req.Version > vr.Max || req.Body.GetVersion() != req.Version) {
			t.Fatalf("accepted version %d outside %+v", req.Version, vr)
		}
		if req.UnsupportedVersion && req.Key != 18 {
			t.Fatalf("fallback for key %d", req.Key)
		}
	})
}
