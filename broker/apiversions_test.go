package broker_test

import (
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata golden files from the broker's answers")

// TestApiVersionsPinned: the broker's ApiVersions answers, byte for byte, at
// every version a client can ask (v0-v5; v5 bootstrapping, naming no
// cluster or node), for invalid client software
// (v3+), and for a version the broker does not serve (answered at v0 with
// UNSUPPORTED_VERSION), are the ones in testdata/apiversions.golden. The
// served version ranges come from the handler registrations; any change to
// a range, a feature or the encoding shows up here.
func TestApiVersionsPinned(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	rc := dialRaw(t, srv)

	type pinCase struct {
		name    string
		version int16
		sw      [2]string
	}
	cases := []pinCase{
		{"v0", 0, [2]string{}},
		{"v1", 1, [2]string{}},
		{"v2", 2, [2]string{}},
		{"v3", 3, [2]string{"strait-test", "1.0"}},
		{"v4", 4, [2]string{"strait-test", "1.0"}},
		{"v5", 5, [2]string{"strait-test", "1.0"}},
		{"v3-invalid-software", 3, [2]string{"-bad", "1.0"}},
		{"v4-invalid-software", 4, [2]string{"strait-test", ""}},
		{"v9-unsupported", 9, [2]string{"strait-test", "1.0"}},
	}
	var got strings.Builder
	for i, c := range cases {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(c.version)
		req.ClientSoftwareName, req.ClientSoftwareVersion = c.sw[0], c.sw[1]
		corr := int32(100 + i)
		rc.send(encodeRequest(req, corr))
		gotCorr, body, err := rc.readResponse()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if gotCorr != corr {
			t.Fatalf("%s: correlation id %d, want %d", c.name, gotCorr, corr)
		}
		fmt.Fprintf(&got, "%s %s\n", c.name, hex.EncodeToString(body))
	}

	const golden = "testdata/apiversions.golden"
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	gotLines, wantLines := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
	if len(gotLines) != len(wantLines) {
		t.Fatalf("%d answers, golden has %d", len(gotLines), len(wantLines))
	}
	for i := range gotLines {
		if gotLines[i] != wantLines[i] {
			t.Errorf("answer differs from %s:\n got %s\nwant %s", golden, gotLines[i], wantLines[i])
		}
	}
}

// TestProduceBelowV3Refused: Produce is advertised from v0 (Kafka 4 does so
// for librdkafka, KAFKA-18659) but served from v3: a v2 request closes the
// connection, as Kafka's does.
func TestProduceBelowV3Refused(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	rc := dialRaw(t, srv)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(2)
	req.Acks, req.TimeoutMillis = 1, 1000
	rc.send(encodeRequest(req, 1))
	rc.expectClosed()
}
