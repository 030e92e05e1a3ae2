package broker_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestUpdateFeatures: the levels advertised (4.4-IV2) are kept, an update to
// them succeeds, and Kafka's refusals come with Kafka's messages.
func TestUpdateFeatures(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	v1 := kversion.Stable()
	v1.SetMaxKeyVersion(int16(kmsg.UpdateFeatures), 1)
	clients := map[int16]*kgo.Client{1: newClient(t, srv, kgo.MaxVersions(v1)), 2: newClient(t, srv)}
	update := func(version int16, feature string, level int16, typ int8) *kmsg.UpdateFeaturesResponse {
		t.Helper()
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version = version
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = feature, level, typ
		req.FeatureUpdates = append(req.FeatureUpdates, u)
		resp, err := req.RequestWith(ctxFor(t), clients[version])
		if err != nil {
			t.Fatal(err)
		}
		if resp.Version != version {
			t.Fatalf("answered at v%d, want v%d", resp.Version, version)
		}
		return resp
	}
	if r := update(1, "metadata.version", 33, 1); r.ErrorCode != 0 || len(r.Results) != 1 || r.Results[0].ErrorCode != 0 {
		t.Fatalf("no-op upgrade at v1: %+v", r)
	}
	if r := update(2, "group.version", 1, 1); r.ErrorCode != 0 || len(r.Results) != 0 {
		t.Fatalf("no-op upgrade at v2: %+v", r)
	}
	const prefix = "The update failed for all features since the following feature had an error: "
	for _, c := range []struct {
		feature string
		level   int16
		typ     int8
		msg     string
	}{
		{"metadata.version", 34, 1, "Invalid update version 34 for feature metadata.version. Local controller 1 only supports versions 7-33"},
		{"metadata.version", 25, 1, "Invalid update version 25 for feature metadata.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{"metadata.version", 25, 2, "Invalid metadata.version 25. Refusing to perform the requested downgrade because it might delete metadata information."},
		{"metadata.version", 25, 3, "Invalid metadata.version 25. Unsafe metadata downgrade is not supported in this version."},
		{"transaction.version", 3, 1, "Invalid update version 3 for feature transaction.version. Local controller 1 only supports versions 0-2"},
		{"no.such.feature", 1, 1, "Invalid update version 1 for feature no.such.feature. Local controller 1 does not support this feature."},
		{"group.version", -1, 1, "Invalid update version -1 for feature group.version. A feature version cannot be less than 0."},
		{"group.version", 1, 9, "Invalid update version 1 for feature group.version. The controller does not support the given upgrade type."},
		{"kraft.version", 0, 2, "Invalid update version 0 for feature kraft.version. Strait implements only level 1 of this feature."},
	} {
		r := update(1, c.feature, c.level, c.typ)
		if r.ErrorCode != kerr.InvalidUpdateVersion.Code || r.ErrorMessage == nil || *r.ErrorMessage != prefix+c.msg || len(r.Results) != 0 {
			msg := ""
			if r.ErrorMessage != nil {
				msg = strings.TrimPrefix(*r.ErrorMessage, prefix)
			}
			t.Errorf("%s=%d type %d: code %d %q, want %q", c.feature, c.level, c.typ, r.ErrorCode, msg, c.msg)
		}
	}
}

// finalizedFeatures asks srv's ApiVersions for its finalized features and
// their epoch.
func finalizedFeatures(t *testing.T, cl *kgo.Client) (map[string]int16, int64) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion, req.NodeID = "strait-test", "1", -1
	resp, err := req.RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: error %d", resp.ErrorCode)
	}
	out := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		out[f.Name] = f.MaxVersionLevel
	}
	return out, resp.FinalizedFeaturesEpoch
}

// TestUpdateFeaturesStored: an accepted update is stored (in etcd) and
// changes what ApiVersions reports, finalized levels and epoch, also after a
// restart; a feature downgraded to 0 is no longer finalized; validate_only
// and a refused request in which one update would have been accepted
// change nothing.
func TestUpdateFeaturesStored(t *testing.T) {
	dir := t.TempDir()
	srv := startBroker(t, dir)
	cl := newClient(t, srv)
	update := func(validateOnly bool, ups ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesResponse {
		t.Helper()
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.ValidateOnly = validateOnly
		req.FeatureUpdates = ups
		resp, err := req.RequestWith(ctxFor(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	up := func(feature string, level int16, typ int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = feature, level, typ
		return u
	}
	before, epoch0 := finalizedFeatures(t, cl)
	if before["group.version"] != 1 || before["eligible.leader.replicas.version"] != 1 || epoch0 != 0 {
		t.Fatalf("before any update: %v epoch %d", before, epoch0)
	}
	// validate_only: accepted, nothing stored.
	if r := update(true, up("eligible.leader.replicas.version", 0, 2)); r.ErrorCode != 0 {
		t.Fatalf("validate only: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if got, e := finalizedFeatures(t, cl); got["eligible.leader.replicas.version"] != 1 || e != 0 {
		t.Fatalf("validate only changed the features: %v epoch %d", got, e)
	}
	// A request whose second update is refused stores neither.
	if r := update(false, up("eligible.leader.replicas.version", 0, 2), up("transaction.version", 9, 1)); r.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("half-invalid request: %d", r.ErrorCode)
	}
	if got, e := finalizedFeatures(t, cl); got["eligible.leader.replicas.version"] != 1 || e != 0 {
		t.Fatalf("a refused request changed the features: %v epoch %d", got, e)
	}
	if r := update(false, up("eligible.leader.replicas.version", 0, 2), up("group.version", 0, 2)); r.ErrorCode != 0 {
		t.Fatalf("two downgrades: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	check := func(when string) int64 {
		t.Helper()
		got, e := finalizedFeatures(t, cl)
		_, groupListed := got["group.version"]
		_, elrListed := got["eligible.leader.replicas.version"]
		if groupListed || elrListed || got["metadata.version"] != 33 || e <= 0 {
			t.Fatalf("%s: finalized %v epoch %d, want neither group.version nor eligible.leader.replicas.version, a positive epoch", when, got, e)
		}
		return e
	}
	epoch := check("after the update")
	// Now an upgrade of eligible.leader.replicas.version needs its type.
	if r := update(false, up("eligible.leader.replicas.version", 1, 2)); r.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("upgrade with a downgrade type: %d", r.ErrorCode)
	}
	srv.Close()
	srv = startBroker(t, dir)
	cl = newClient(t, srv)
	if e := check("after a restart"); e != epoch {
		t.Fatalf("epoch %d after the restart, was %d", e, epoch)
	}
	if r := update(false, up("group.version", 1, 1), up("eligible.leader.replicas.version", 1, 1)); r.ErrorCode != 0 {
		t.Fatalf("upgrade back: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if got, e := finalizedFeatures(t, cl); got["group.version"] != 1 || got["eligible.leader.replicas.version"] != 1 || e <= epoch {
		t.Fatalf("after upgrading group.version back: %v epoch %d (was %d)", got, e, epoch)
	}
}
