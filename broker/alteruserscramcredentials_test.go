package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kadm's AlterUserSCRAMs and DescribeUserSCRAMs (what kafka-configs
// --entity-type users does) against a broker: credentials are added,
// described with their iterations, refused with Kafka's codes, deleted.
func TestUserScramCredentialsAdmin(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	adm := kadm.NewClient(newClient(t, srv))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"},
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := altered["alice"]; r.Err != nil {
		t.Errorf("alice: %v", r.Err)
	}
	if r := altered["bob"]; r.Err != nil {
		t.Errorf("bob: %v", r.Err)
	}
	// What kadm refuses before sending, sent raw: Kafka's codes and messages.
	raw := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, u := range []struct {
		name       string
		mech       int8
		iterations int32
	}{{"carol", 1, 100}, {"dave", 2, 20000}, {"erin", 3, 4096}, {"", 1, 4096}, {"frank", 1, 4096}, {"frank", 2, 4096}} {
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = u.name, u.mech, u.iterations, []byte("salt"), make([]byte, 32)
		raw.Upsertions = append(raw.Upsertions, up)
	}
	rawResp, err := raw.RequestWith(ctx, newClient(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		code int16
		msg  string
	}{
		"carol": {kerr.UnacceptableCredential.Code, "Too few iterations"},
		"dave":  {kerr.UnacceptableCredential.Code, "Too many iterations"},
		"erin":  {kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"},
		"":      {kerr.UnacceptableCredential.Code, "Username must not be empty"},
		"frank": {kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"},
	}
	if len(rawResp.Results) != len(want) {
		t.Errorf("raw results %+v", rawResp.Results)
	}
	for _, r := range rawResp.Results {
		if w := want[r.User]; r.ErrorCode != w.code || r.ErrorMessage == nil || *r.ErrorMessage != w.msg {
			t.Errorf("%q: %d %v, want %d %q", r.User, r.ErrorCode, r.ErrorMessage, w.code, w.msg)
		}
	}

	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(described) != 2 {
		t.Fatalf("described %+v", described)
	}
	if a := described["alice"]; a.Err != nil || len(a.CredInfos) != 1 || a.CredInfos[0].Mechanism != kadm.ScramSha512 || a.CredInfos[0].Iterations != 8192 {
		t.Errorf("alice: %+v", a)
	}
	described, err = adm.DescribeUserSCRAMs(ctx, "bob", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if b := described["bob"]; b.Err != nil || len(b.CredInfos) != 1 || b.CredInfos[0].Mechanism != kadm.ScramSha256 {
		t.Errorf("bob: %+v", b)
	}
	if n := described["nobody"]; !errors.Is(n.Err, kerr.ResourceNotFound) ||
		n.ErrMessage != "Attempt to describe a user credential that does not exist: nobody" {
		t.Errorf("nobody: %+v", n)
	}

	altered, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha256},
		{User: "alice", Mechanism: kadm.ScramSha256},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := altered["bob"]; r.Err != nil {
		t.Errorf("delete bob: %v", r.Err)
	}
	if r := altered["alice"]; !errors.Is(r.Err, kerr.ResourceNotFound) {
		t.Errorf("delete alice's missing SHA-256: %v", r.Err)
	}
	described, err = adm.DescribeUserSCRAMs(ctx)
	if err != nil || len(described) != 1 || described["alice"].Err != nil {
		t.Errorf("after deletion: %+v %v", described, err)
	}
}
