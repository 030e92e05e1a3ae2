package controller

import (
	"testing"
)

func TestKeyspaceRoundTrip(t *testing.T) {
	ks := keyspace{prefix: "/strait"}
	for _, tc := range []struct {
		key  string
		want parsedKey
	}{
		{ks.clusterID(), parsedKey{kind: keyClusterID}},
		{ks.broker(7), parsedKey{kind: keyBroker, nodeID: 7}},
		{ks.topic("a.b"), parsedKey{kind: keyTopic, topic: "a.b"}},
		{ks.partition("a.b", 12), parsedKey{kind: keyPartition, topic: "a.b", partition: 12}},
		{ks.election() + "/694d8a", parsedKey{kind: keyElection}},
		{"/other/topics/x", parsedKey{}},
		{ks.root() + "brokers/x", parsedKey{}},
		{ks.root() + "partitions/x/-1", parsedKey{}},
	} {
		if got := ks.parse(tc.key); got != tc.want {
			t.Errorf("parse(%q) = %+v, want %+v", tc.key, got, tc.want)
		}
	}
}

func TestKafkaUUID(t *testing.T) {
	seen := map[[16]byte]bool{}
	for range 1000 {
		id := NewKafkaUUID()
		s := FormatUUID(id)
		if len(s) != 22 || s[0] == '-' || isReservedUUID(id) || seen[id] {
			t.Fatalf("bad uuid %q", s)
		}
		if id[6]>>4 != 4 || id[8]>>6 != 2 {
			t.Fatalf("uuid %x is not a version 4 variant 2 uuid", id)
		}
		back, err := ParseUUID(s)
		if err != nil || back != id {
			t.Fatalf("ParseUUID(%q) = %x, %v", s, back, err)
		}
		seen[id] = true
	}
	if _, err := ParseUUID("short"); err == nil {
		t.Fatal("ParseUUID accepted a short string")
	}
}
