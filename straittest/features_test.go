package straittest_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/straittest"
)

// UpdateFeatures sent to one broker changes what every broker's ApiVersions
// reports (the levels are stored in etcd, each broker's metadata cache
// follows them), with the same epoch.
func TestUpdateFeaturesAcrossBrokers(t *testing.T) {
	c := straittest.StartCluster(t, 3)
	cl := c.Client()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "eligible.leader.replicas.version", 1, 1
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(1))
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("UpdateFeatures: %v %+v", err, resp)
	}
	epochs := map[int64]bool{}
	for _, b := range c.Brokers() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			avr := kmsg.NewPtrApiVersionsRequest()
			avr.ClientSoftwareName, avr.ClientSoftwareVersion, avr.NodeID = "strait-test", "1", -1
			av, err := avr.RequestWith(ctx, cl.Broker(int(b.ID())))
			level := int16(-1)
			if err == nil {
				for _, f := range av.FinalizedFeatures {
					if f.Name == "eligible.leader.replicas.version" {
						level = f.MaxVersionLevel
					}
				}
			}
			// Level 1 is also the default, finalized before any update
			// with epoch 0: wait for the update itself, which each
			// broker's metadata watch brings in its own time.
			if level == 1 && av.FinalizedFeaturesEpoch > 0 {
				epochs[av.FinalizedFeaturesEpoch] = true
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("broker %d: eligible.leader.replicas.version at %d, want 1 (err %v, %+v)", b.ID(), level, err, av)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(epochs) != 1 {
		t.Fatalf("brokers report different finalized features epochs: %v", epochs)
	}
}
