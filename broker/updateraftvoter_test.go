package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestUpdateRaftVoterNotServed: UpdateRaftVoter (key 82) is a controller-only
// API. A Kafka 4.4 broker does not advertise it (kversion's 4.4 broker
// table lacks it, unlike AddRaftVoter and RemoveRaftVoter, which brokers
// forward), and closes the connection of a request for a key it does not
// enable (SocketServer: "not enabled"); Strait's broker neither advertises
// nor serves it, and closes the connection likewise, at every version.
func TestUpdateRaftVoterNotServed(t *testing.T) {
	if _, ok := kversion.V4_4_0().LookupMaxKeyVersion(int16(kmsg.UpdateRaftVoter)); ok {
		t.Fatal("kversion says a Kafka 4.4 broker advertises UpdateRaftVoter: serve it")
	}
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(2) // not flexible: rawRequest reads its v0 response header as is
	resp := rawRequest(t, srv, req).(*kmsg.ApiVersionsResponse)
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(kmsg.UpdateRaftVoter) {
			t.Fatalf("ApiVersions advertises UpdateRaftVoter v%d-%d", k.MinVersion, k.MaxVersion)
		}
	}
	for _, v := range []int16{0, 1} {
		r := kmsg.NewPtrUpdateRaftVoterRequest()
		r.SetVersion(v)
		r.ClusterID = new(string)
		r.VoterID = 1
		rc := dialRaw(t, srv)
		rc.send(encodeRequest(r, 7))
		rc.expectClosed()
	}
}
