package controller

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestUpdateTopicConfigs: the new configs are in the cache and the listeners
// when the update returns; the topic's other fields stay; a write that
// loses a race is retried on the new value; a missing topic is
// UNKNOWN_TOPIC_OR_PARTITION.
func TestUpdateTopicConfigs(t *testing.T) {
	c := startController(t, testConfig(t, 1))
	created, err := c.CreateTopic(ctxT(t), CreateTopicRequest{Name: "cfg", NumPartitions: 2, ReplicationFactor: 1,
		Configs: map[string]string{"retention.ms": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []map[string]string
	c.Listen(func(ch TopicChange) {
		mu.Lock()
		seen = append(seen, ch.Topic.Configs)
		mu.Unlock()
	})
	if err := c.SetTopicConfigs(ctxT(t), "cfg", map[string]string{"segment.ms": "5"}); err != nil {
		t.Fatal(err)
	}
	got, _ := c.Topic("cfg")
	if !maps.Equal(got.Configs, map[string]string{"segment.ms": "5"}) || got.ID != created.ID || len(got.Partitions) != 2 {
		t.Fatalf("after SetTopicConfigs: %+v", got)
	}
	mu.Lock()
	if n := len(seen); n < 2 || !maps.Equal(seen[n-1], got.Configs) {
		t.Errorf("listener saw %v", seen)
	}
	mu.Unlock()

	// An update racing with another writer is called again with its value.
	calls := 0
	err = c.UpdateTopicConfigs(ctxT(t), "cfg", func(cur map[string]string) (map[string]string, error) {
		calls++
		if calls == 1 {
			if err := c.SetTopicConfigs(context.Background(), "cfg", map[string]string{"segment.ms": "6"}); err != nil {
				t.Error(err)
			}
		}
		cur["retention.ms"] = cur["segment.ms"] + "0"
		return cur, nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("racing update: %v after %d calls", err, calls)
	}
	got, _ = c.Topic("cfg")
	if !maps.Equal(got.Configs, map[string]string{"segment.ms": "6", "retention.ms": "60"}) {
		t.Fatalf("after the racing update: %v", got.Configs)
	}

	err = c.SetTopicConfigs(ctxT(t), "nope", nil)
	requireCode(t, err, kerr.UnknownTopicOrPartition, "The topic 'nope' does not exist.")
}

// TestBrokerConfigsWatch: dynamic broker configs written per broker and for
// the cluster default reach the watcher with their revision; emptying an
// entity deletes it.
func TestBrokerConfigsWatch(t *testing.T) {
	c := startController(t, testConfig(t, 1))
	type update struct {
		set BrokerConfigSet
		rev int64
	}
	updates := make(chan update, 16)
	if err := c.WatchBrokerConfigs(ctxT(t), 10*time.Second, func(set BrokerConfigSet, rev int64) {
		updates <- update{set, rev}
	}); err != nil {
		t.Fatal(err)
	}
	if first := <-updates; len(first.set) != 0 {
		t.Fatalf("initial set %v", first.set)
	}
	set := func(entity string, configs map[string]string) int64 {
		t.Helper()
		rev, err := c.UpdateBrokerConfigs(ctxT(t), entity, func(map[string]string) (map[string]string, error) { return configs, nil })
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	waitFor := func(rev int64) BrokerConfigSet {
		t.Helper()
		for u := range updates {
			if u.rev >= rev {
				return u.set
			}
		}
		return nil
	}
	set(DefaultBrokerConfigEntity, map[string]string{"log.retention.ms": "1000"})
	got := waitFor(set("1", map[string]string{"message.max.bytes": "2000"}))
	if got[""]["log.retention.ms"] != "1000" || got["1"]["message.max.bytes"] != "2000" {
		t.Fatalf("watched %v", got)
	}
	if got := waitFor(set("1", nil)); len(got) != 1 || !strings.Contains(got[""]["log.retention.ms"], "1000") {
		t.Fatalf("after deleting broker 1's configs: %v", got)
	}
	if rev, err := c.UpdateBrokerConfigs(ctxT(t), "", func(cur map[string]string) (map[string]string, error) { return cur, nil }); err != nil || rev != 0 {
		t.Fatalf("unchanged update: rev %d, %v", rev, err)
	}
}
