package protocol

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func parsed(t *testing.T, key, version int16, body kmsg.Request) *Request {
	t.Helper()
	body.SetVersion(version)
	hv := int16(1)
	if body.IsFlexible() {
		hv = 2
	}
	req, err := ParseRequest(requestFrame(key, version, 555, strPtr("c"), hv, nil, body.AppendTo(nil)), KafkaVersions, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestAppendResponseHeaders(t *testing.T) {
	for _, c := range []struct {
		name      string
		key, v    int16
		body      kmsg.Request
		headerLen int
	}{
		{"metadata v8 header v0", 3, 8, kmsg.NewPtrMetadataRequest(), 4},
		{"metadata v9 header v1", 3, 9, kmsg.NewPtrMetadataRequest(), 5},
		{"apiversions v2 header v0", 18, 2, kmsg.NewPtrApiVersionsRequest(), 4},
		{"apiversions v3 header v0 despite flexible", 18, 3, &kmsg.ApiVersionsRequest{ClientSoftwareName: "a", ClientSoftwareVersion: "1"}, 4},
	} {
		req := parsed(t, c.key, c.v, c.body)
		resp := req.Body.ResponseKind()
		resp.SetVersion(0) // AppendResponse must set it from the request
		prefix := []byte("keep")
		out := AppendResponse(prefix, req, resp)
		if !bytes.Equal(out[:4], []byte("keep")) {
			t.Fatalf("%s: dst prefix overwritten", c.name)
		}
		out = out[4:]
		if int(be32(out)) != len(out)-4 || int32(be32(out[4:])) != 555 {
			t.Fatalf("%s: size/correlation wrong: %x", c.name, out[:8])
		}
		if resp.GetVersion() != c.v {
			t.Fatalf("%s: response version %d", c.name, resp.GetVersion())
		}
		wantBody := resp.AppendTo(nil)
		if got := out[4+c.headerLen:]; !bytes.Equal(got, wantBody) {
			t.Fatalf("%s: body after %d-byte header differs", c.name, c.headerLen)
		}
		if c.headerLen == 5 && out[8] != 0 {
			t.Fatalf("%s: header tag byte %d", c.name, out[8])
		}
	}
}

func decodeApiVersions(t *testing.T, frame []byte, version int16) *kmsg.ApiVersionsResponse {
	t.Helper()
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	if err := resp.ReadFrom(frame[8:]); err != nil { // size, correlation id; header v0
		t.Fatal(err)
	}
	return resp
}

func TestApiVersionsResponse(t *testing.T) {
	table := VersionTable{
		18: KafkaVersions[18],
		0:  KafkaVersions[0],
		3:  {Min: 0, Max: 99}, // above kmsg: capped
		1:  KafkaVersions[1],
	}
	for v := int16(0); v <= 4; v++ {
		body := &kmsg.ApiVersionsRequest{ClientSoftwareName: "franz-go", ClientSoftwareVersion: "1.2.3"}
		req := parsed(t, 18, v, body)
		resp := decodeApiVersions(t, AppendResponse(nil, req, ApiVersionsResponse(req, table, Kafka44Features(0))), v)
		if resp.ErrorCode != 0 || resp.ThrottleMillis != 0 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		want := [][3]int16{{0, 0, 13}, {1, 4, 18}, {3, 0, (&kmsg.MetadataRequest{}).MaxVersion()}, {18, 0, 5}}
		if len(resp.ApiKeys) != len(want) {
			t.Fatalf("v%d: %d keys", v, len(resp.ApiKeys))
		}
		for i, k := range resp.ApiKeys {
			if [3]int16{k.ApiKey, k.MinVersion, k.MaxVersion} != want[i] {
				t.Fatalf("v%d: key %d = %v, want %v", v, i, k, want[i])
			}
		}
		features := map[string][2]int16{}
		for _, f := range resp.SupportedFeatures {
			features[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
		}
		finalized := map[string][2]int16{}
		for _, f := range resp.FinalizedFeatures {
			finalized[f.Name] = [2]int16{f.MinVersionLevel, f.MaxVersionLevel}
		}
		switch {
		case v < 3:
			if len(features)+len(finalized) != 0 {
				t.Fatalf("v%d: features in a pre-v3 response", v)
			}
		case v == 3: // features with min 0 are hidden from v3 clients (KAFKA-17492)
			if len(features) != 1 || features["metadata.version"] != [2]int16{7, 33} {
				t.Fatalf("v3 supported features %v", features)
			}
		default:
			if len(features) != 7 || features["share.version"] != [2]int16{0, 1} || features["metadata.version"] != [2]int16{7, 33} ||
				features["transaction.version"] != [2]int16{0, 2} || features["kraft.version"] != [2]int16{0, 1} ||
				features["streams.version"] != [2]int16{0, 1} {
				t.Fatalf("v4 supported features %v", features)
			}
		}
		if v >= 3 {
			if len(finalized) != 6 || finalized["share.version"] != [2]int16{1, 1} || finalized["metadata.version"] != [2]int16{33, 33} ||
				finalized["group.version"] != [2]int16{1, 1} || finalized["transaction.version"] != [2]int16{2, 2} ||
				finalized["streams.version"] != [2]int16{1, 1} || finalized["eligible.leader.replicas.version"] != [2]int16{1, 1} {
				t.Fatalf("v%d finalized features %v (level 0 must be left out)", v, finalized)
			}
			if resp.FinalizedFeaturesEpoch != 0 {
				t.Fatalf("v%d epoch %d", v, resp.FinalizedFeaturesEpoch)
			}
		}
	}
}

func TestApiVersionsResponseFeaturesEpoch(t *testing.T) {
	req := parsed(t, 18, 4, &kmsg.ApiVersionsRequest{ClientSoftwareName: "a", ClientSoftwareVersion: "b"})
	resp := ApiVersionsResponse(req, KafkaVersions, Kafka44Features(4242)).(*kmsg.ApiVersionsResponse)
	if resp.FinalizedFeaturesEpoch != 4242 || len(resp.ApiKeys) != len(KafkaVersions) {
		t.Fatalf("epoch %d, %d keys", resp.FinalizedFeaturesEpoch, len(resp.ApiKeys))
	}
}

func TestApiVersionsInvalidSoftwareName(t *testing.T) {
	for _, c := range []struct {
		name, version string
		valid         bool
	}{
		{"apache-kafka-java", "4.0.0", true},
		{"a", "1", true},
		{"", "1", false},
		{"-lead", "1", false},
		{"trail.", "1", false},
		{"sp ace", "1", false},
		{"ok", "1.0-SNAPSHOT", true},
		{"ok", "1_0", false},
	} {
		req := parsed(t, 18, 3, &kmsg.ApiVersionsRequest{ClientSoftwareName: c.name, ClientSoftwareVersion: c.version})
		resp := ApiVersionsResponse(req, KafkaVersions, Kafka44Features(0)).(*kmsg.ApiVersionsResponse)
		if c.valid != (resp.ErrorCode == 0) || !c.valid && (resp.ErrorCode != 42 || len(resp.ApiKeys) != 0) {
			t.Fatalf("%q/%q: error %d with %d keys", c.name, c.version, resp.ErrorCode, len(resp.ApiKeys))
		}
	}
	// Below v3 there is no software name to check.
	req := parsed(t, 18, 2, kmsg.NewPtrApiVersionsRequest())
	if resp := ApiVersionsResponse(req, KafkaVersions, Kafka44Features(0)).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("v2: error %d", resp.ErrorCode)
	}
}

func TestKafkaVersionsDecodable(t *testing.T) {
	for key, vr := range KafkaVersions {
		body := kmsg.RequestForKey(key)
		if body == nil {
			t.Fatalf("key %d unknown to kmsg", key)
		}
		if vr.Min > vr.Max || vr.Max > body.MaxVersion() || vr.acceptedMin() > vr.Max {
			t.Fatalf("key %d (%s): %+v, kmsg max %d", key, kmsg.NameForKey(key), vr, body.MaxVersion())
		}
	}
	if p := KafkaVersions[0]; p.Min != 0 || p.acceptedMin() != 3 {
		t.Fatalf("produce %+v", p)
	}
}

// TestApiVersionsFramesMatchFreshEncoding: the cached frames are byte for
// byte what encoding each response afresh gives, for every version, with
// the request's own correlation id, twice (the second from the cache), and
// the error answers (invalid client software, an unsupported version) too.
func TestApiVersionsFramesMatchFreshEncoding(t *testing.T) {
	frames := NewApiVersionsFrames(KafkaVersions)
	check := func(name string, req *Request) {
		t.Helper()
		want := AppendResponse([]byte("keep"), req, ApiVersionsResponse(req, KafkaVersions, Kafka44Features(0)))
		for i := range 2 {
			if got := frames.AppendResponse([]byte("keep"), req); !bytes.Equal(got, want) {
				t.Fatalf("%s, call %d: cached frame differs from a fresh encoding\n got %x\nwant %x", name, i, got, want)
			}
		}
	}
	for v := int16(0); v <= 4; v++ {
		req := parsed(t, 18, v, &kmsg.ApiVersionsRequest{ClientSoftwareName: "franz-go", ClientSoftwareVersion: "1.2.3"})
		check("valid v"+string(rune('0'+v)), req)
		req.CorrelationID = 777 // a cached body with another request's id
		check("valid v"+string(rune('0'+v))+" other id", req)
	}
	check("invalid software v3", parsed(t, 18, 3, &kmsg.ApiVersionsRequest{ClientSoftwareName: "-bad", ClientSoftwareVersion: "1"}))
	unsupported := parsed(t, 18, 0, kmsg.NewPtrApiVersionsRequest())
	unsupported.UnsupportedVersion = true
	check("unsupported version", unsupported)
	if resp := decodeApiVersions(t, frames.AppendResponse(nil, unsupported), 0); resp.ErrorCode != errUnsupportedVersion {
		t.Fatalf("unsupported version answered with code %d", resp.ErrorCode)
	}
}
