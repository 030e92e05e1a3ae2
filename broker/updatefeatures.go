package broker

// UpdateFeatures (key 57); versions: see the registration below.
//
// `kafka-features upgrade/downgrade` and Admin.updateFeatures. Kafka's
// broker forwards the request to the controller, whose
// FeatureControlManager checks every update in request order against the
// finalized levels, stops at the first refusal, and otherwise writes them
// all at once (nothing with validate_only); this handler runs the same
// checks inside a compare-and-swap of the levels stored in etcd
// (controller.UpdateFeatures), so that every broker's ApiVersions
// (finalized features and their epoch: `kafka-features describe`) reports
// them, across restarts:
//
//   - ALTER on the CLUSTER, else CLUSTER_AUTHORIZATION_FAILED for the whole
//     request (the forwarding broker's getErrorResponse: no results);
//   - an unknown upgrade type, a negative level, a level outside the
//     supported range ("Local controller N only supports versions a-b", or
//     "does not support this feature" for a feature it does not know), a
//     downgrade with the UPGRADE type, an upgrade with a downgrade type, a
//     metadata.version below 3.3-IV3 or below the current one: Kafka's
//     INVALID_UPDATE_VERSION and message;
//   - kraft.version, which the quorum's kind decides (1 with the embedded
//     etcd, 0 with an external one): any other level is refused with
//     INVALID_UPDATE_VERSION saying which level Strait implements.
//
// A feature updated to level 0 is no longer listed as finalized (Kafka's
// FeatureControlManager.replay). Strait's behaviour stays that of Kafka
// 4.4's latest levels whatever is stored (DIFFERENCES.md). As the
// controller answers, a refusal is reported at the top level prefixed with
// "The update failed for all features since the following feature had an
// error: ", and only v0-1 successes list per-feature results.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/protocol"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.UpdateFeatures, 0, 2, handleUpdateFeatures) }

// features are the feature levels the broker advertises: Kafka 4.4's
// (protocol.Kafka44Features), with kraft.version finalized at 1 (a dynamic
// quorum: AddRaftVoter and RemoveRaftVoter change the embedded etcd's
// membership, raftvoters.go) unless etcd is external, whose membership is
// not Strait's to change (a static quorum: level 0, not listed); over them
// the levels UpdateFeatures stored, whose etcd revision is the epoch.
func (s *Server) features() protocol.Features {
	var stored controller.FinalizedFeatures
	if s.ctrl != nil {
		stored = s.ctrl.FinalizedFeatures()
	}
	return s.featuresWith(stored)
}

func (s *Server) featuresWith(stored controller.FinalizedFeatures) protocol.Features {
	f := protocol.Kafka44Features(stored.Epoch)
	if s.kraftVersion() > 0 {
		f.Finalized = append(f.Finalized, protocol.FinalizedFeature{Name: "kraft.version", Level: 1})
	}
	for name, level := range stored.Levels {
		if name == "kraft.version" {
			continue
		}
		i := slices.IndexFunc(f.Finalized, func(ff protocol.FinalizedFeature) bool { return ff.Name == name })
		switch {
		case level == 0 && i >= 0:
			f.Finalized = slices.Delete(f.Finalized, i, i+1)
		case level != 0 && i >= 0:
			f.Finalized[i].Level = level
		case level != 0:
			f.Finalized = append(f.Finalized, protocol.FinalizedFeature{Name: name, Level: level})
		}
	}
	slices.SortFunc(f.Finalized, func(a, b protocol.FinalizedFeature) int { return strings.Compare(a.Name, b.Name) })
	return f
}

// featureFrames are the ApiVersions frames of one epoch of the finalized
// features.
type featureFrames struct {
	epoch  int64
	frames *protocol.ApiVersionsFrames
}

// apiVersionFrames returns the ApiVersions frames for the features in
// effect: one atomic load and a comparison, the frames being encoded again
// only after UpdateFeatures changed the levels.
func (s *Server) apiVersionFrames() *protocol.ApiVersionsFrames {
	cur := s.featureFrames.Load()
	if s.ctrl == nil {
		return cur.frames
	}
	stored := s.ctrl.FinalizedFeatures()
	if stored.Epoch == cur.epoch {
		return cur.frames
	}
	next := &featureFrames{epoch: stored.Epoch, frames: s.newApiVersionFrames(s.featuresWith(stored))}
	if s.featureFrames.CompareAndSwap(cur, next) {
		return next.frames
	}
	return s.featureFrames.Load().frames
}

func (s *Server) newApiVersionFrames(f protocol.Features) *protocol.ApiVersionsFrames {
	fr := protocol.NewApiVersionsFramesWith(s.versions, f)
	fr.SetIdentity(func() (string, int32) { return s.ClusterID(), s.cfg.NodeID })
	return fr
}

// kraftVersion is the finalized kraft.version: 1 with the embedded etcd.
func (s *Server) kraftVersion() int16 {
	if len(s.cfg.Etcd.Endpoints) == 0 {
		return 1
	}
	return 0
}

// Kafka's FeatureUpdate.UpgradeType codes.
const (
	upgradeTypeUpgrade         int8 = 1
	upgradeTypeSafeDowngrade   int8 = 2
	upgradeTypeUnsafeDowngrade int8 = 3
)

// minimumBootstrapMetadataVersion is 3.3-IV3 (level 7), the lowest
// metadata.version Kafka 4 accepts.
const minimumBootstrapMetadataVersion = 7

func handleUpdateFeatures(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	if !c.authorizeCluster(acl.OpAlter) { // authorize.go
		msg := kerr.ClusterAuthorizationFailed.Description
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		x.respond(resp)
		return
	}
	s := c.srv
	for i := range req.FeatureUpdates {
		// v0 has no upgrade type: Kafka's request takes AllowDowngrade
		// as SAFE_DOWNGRADE, else UPGRADE.
		if u := &req.FeatureUpdates[i]; x.req.Version == 0 {
			u.UpgradeType = upgradeTypeUpgrade
			if u.AllowDowngrade {
				u.UpgradeType = upgradeTypeSafeDowngrade
			}
		}
	}
	// The checks, against the levels in effect, then the new levels.
	check := func(stored controller.FinalizedFeatures) (map[string]int16, string) {
		features := s.featuresWith(stored)
		next := maps.Clone(stored.Levels)
		if next == nil {
			next = map[string]int16{}
		}
		for _, u := range req.FeatureUpdates {
			if msg, refused := featureUpdateRefused(features, s.cfg.NodeID, u.Feature, u.MaxVersionLevel, u.UpgradeType); refused {
				return nil, "The update failed for all features since the following feature had an error: " + msg
			}
			if u.Feature != "kraft.version" {
				next[u.Feature] = u.MaxVersionLevel
			}
		}
		return next, ""
	}
	var refusal string
	if req.ValidateOnly || s.ctrl == nil {
		var stored controller.FinalizedFeatures
		if s.ctrl != nil {
			stored = s.ctrl.FinalizedFeatures()
		}
		_, refusal = check(stored)
	} else {
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		err := s.ctrl.UpdateFeatures(ctx, func(stored controller.FinalizedFeatures) (map[string]int16, error) {
			next, msg := check(stored)
			if msg != "" {
				refusal = msg
				return nil, errFeatureRefused
			}
			return next, nil
		})
		cancel()
		if err != nil && !errors.Is(err, errFeatureRefused) {
			s.logger.Warn("storing the finalized features", "err", err)
			code, msg := errorCode(err)
			resp.ErrorCode, resp.ErrorMessage = code, &msg
			x.respond(resp)
			return
		}
	}
	if refusal != "" {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidUpdateVersion.Code, &refusal
		x.respond(resp)
		return
	}
	if x.req.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			r := kmsg.NewUpdateFeaturesResponseResult()
			r.Feature = u.Feature
			none := "NONE" // Kafka's message of an ApiError without one
			r.ErrorMessage = &none
			resp.Results = append(resp.Results, r)
		}
	}
	x.respond(resp)
}

// errFeatureRefused stops a features update whose checks failed.
var errFeatureRefused = errors.New("feature update refused")

// featureUpdateRefused is FeatureControlManager.updateFeature's verdict on
// setting feature to level, with Strait's own refusal last: the message of
// the INVALID_UPDATE_VERSION, or false when the update is accepted.
func featureUpdateRefused(f protocol.Features, nodeID int32, feature string, level int16, upgradeType int8) (string, bool) {
	invalid := func(why string) (string, bool) {
		return fmt.Sprintf("Invalid update version %d for feature %s. %s", level, feature, why), true
	}
	if upgradeType < upgradeTypeUpgrade || upgradeType > upgradeTypeUnsafeDowngrade {
		return invalid("The controller does not support the given upgrade type.")
	}
	var current int16 // a feature not finalized is at level 0
	for _, ff := range f.Finalized {
		if ff.Name == feature {
			current = ff.Level
		}
	}
	if level < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	var supMin, supMax int16 // unknown: Kafka's DISABLED range, 0-0
	for _, sf := range f.Supported {
		if sf.Name == feature {
			supMin, supMax = sf.MinVersion, sf.MaxVersion
		}
	}
	if level < supMin || level > supMax {
		who := "Local controller " + strconv.Itoa(int(nodeID))
		if supMax == 0 {
			return invalid(who + " does not support this feature.")
		}
		rng := strconv.Itoa(int(supMin))
		if supMin != supMax {
			rng += "-" + strconv.Itoa(int(supMax))
		}
		return invalid(who + " only supports versions " + rng)
	}
	switch {
	case level < current && upgradeType == upgradeTypeUpgrade:
		return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case level > current && upgradeType != upgradeTypeUpgrade:
		return invalid("Can't downgrade to a newer version.")
	}
	if feature == "metadata.version" {
		bad := func(why string) (string, bool) {
			return fmt.Sprintf("Invalid metadata.version %d. %s", level, why), true
		}
		switch {
		case level < minimumBootstrapMetadataVersion:
			return bad("Unable to set a metadata.version less than 3.3-IV3")
		case level < current && upgradeType == upgradeTypeUnsafeDowngrade:
			return bad("Unsafe metadata downgrade is not supported in this version.")
		case level < current:
			// 4.4-IV2 adds controller unregistration records, so each
			// downgrade from it might delete metadata.
			return bad("Refusing to perform the requested downgrade because it might delete metadata information.")
		}
	}
	if feature == "kraft.version" && level != current {
		// The quorum's kind decides it: the embedded etcd's (dynamic) or an
		// external one's (static).
		return invalid("Strait implements only level " + strconv.Itoa(int(current)) + " of this feature.")
	}
	return "", false
}
