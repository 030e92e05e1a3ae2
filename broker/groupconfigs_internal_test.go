package broker

import (
	"context"
	"testing"
	"time"
)

// A group config set through one broker reaches the group coordinator of
// another (the group may live on any broker) through the metadata watch.
func TestGroupConfigsReachEveryBroker(t *testing.T) {
	srvs, _ := startEtcdCluster(t, 2)
	defer func() {
		for _, s := range srvs {
			s.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := alterResource{name: "g", ops: []alterOp{{name: "consumer.heartbeat.interval.ms", value: ptr("7000")},
		{name: "consumer.session.timeout.ms", value: ptr("50000")}}}
	if err := srvs[0].alterGroupConfigs(ctx, r, false); err != nil {
		t.Fatal(err)
	}
	timeouts := srvs[1].groups().settings.coord.ConsumerTimeouts
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, h := timeouts("g")
		if s == 50*time.Second && h == 7*time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker 2 runs group g with %v / %v, want 50s / 7s", s, h)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s, h := timeouts("other"); s != 45*time.Second || h != 5*time.Second {
		t.Errorf("a group without configs: %v / %v, want the broker's 45s / 5s", s, h)
	}
}
