package broker_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// kafka44Exceptions are the API keys a Kafka 4.4 broker advertises that
// Strait does not (yet) answer as Kafka does, each with the reason. Every
// other key must be served at exactly Kafka 4.4's versions, floor included.
// A key listed here that Strait serves at Kafka's versions fails the test
// too: remove it from the list.
var kafka44Exceptions = map[kmsg.Key]string{}

// kafka44Range is Kafka 4.4's advertised range for key from kversion, or
// ok false. kversion exposes only the maximum; the minimum is found by
// comparing a one-key table with candidate ranges (Versions.Equal compares
// both ends).
func kafka44Range(key int16) (lo, hi int16, ok bool) {
	hi, ok = kversion.V4_4_0().LookupMaxKeyVersion(key)
	if !ok {
		return 0, 0, false
	}
	for lo = 0; lo <= hi; lo++ {
		if oneKey(kversion.V4_4_0(), key).Equal(versionsOf(key, lo, hi)) {
			return lo, hi, true
		}
	}
	panic(fmt.Sprintf("kversion 4.4 key %d: no minimum in 0-%d", key, hi))
}

// oneKey strips vs down to key.
func oneKey(vs *kversion.Versions, key int16) *kversion.Versions {
	var others []int16
	vs.EachMaxKeyVersion(func(k, _ int16) {
		if k != key {
			others = append(others, k)
		}
	})
	for _, k := range others {
		vs.SetMaxKeyVersion(k, -1)
	}
	return vs
}

// versionsOf is a table of key at lo-hi, as an ApiVersions answer gives it.
func versionsOf(key, lo, hi int16) *kversion.Versions {
	r := kmsg.NewApiVersionsResponse()
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = key, lo, hi
	r.ApiKeys = append(r.ApiKeys, k)
	return kversion.FromApiVersionsResponse(&r)
}

// TestApiVersionsMatchKafka44: the broker's ApiVersions answer (v5, over
// the wire) lists every key Kafka 4.4's broker does (franz-go's
// kversion.V4_4_0), each at Kafka's range, floor included, and no other
// key, except the keys of kafka44Exceptions.
func TestApiVersionsMatchKafka44(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(5)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "strait-test", "1.0"
	rc := dialRaw(t, srv)
	rc.send(encodeRequest(req, 1))
	_, body, err := rc.readResponse()
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(5)
	if err := resp.ReadFrom(body); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions v5: %v, error code %d", err, resp.ErrorCode)
	}
	served := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		served[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	var keys []int16
	kversion.V4_4_0().EachMaxKeyVersion(func(k, _ int16) { keys = append(keys, k) })
	for k := range served {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)

	var problems []string
	for _, k := range keys {
		name := kmsg.NameForKey(k)
		s, isServed := served[k]
		lo, hi, inKafka := kafka44Range(k)
		reason, excepted := kafka44Exceptions[kmsg.Key(k)]
		switch {
		case !inKafka:
			problems = append(problems, fmt.Sprintf("%s (%d): served at v%d-%d, Kafka 4.4 does not advertise it", name, k, s[0], s[1]))
		case isServed && versionsOf(k, s[0], s[1]).Equal(oneKey(kversion.V4_4_0(), k)):
			if excepted {
				problems = append(problems, fmt.Sprintf("%s (%d): served at Kafka 4.4's v%d-%d but listed as an exception (%s): remove it from kafka44Exceptions", name, k, lo, hi, reason))
			}
		case excepted:
			t.Logf("%s (%d): excepted (%s); Kafka 4.4 v%d-%d, served: %v", name, k, reason, lo, hi, isServed)
		case !isServed:
			problems = append(problems, fmt.Sprintf("%s (%d): not served; Kafka 4.4 serves v%d-%d", name, k, lo, hi))
		default:
			problems = append(problems, fmt.Sprintf("%s (%d): served at v%d-%d; Kafka 4.4 serves v%d-%d", name, k, s[0], s[1], lo, hi))
		}
	}
	for k := range kafka44Exceptions {
		if _, ok := kversion.V4_4_0().LookupMaxKeyVersion(int16(k)); !ok {
			problems = append(problems, fmt.Sprintf("%s: listed as an exception, but Kafka 4.4 does not advertise it", k.Name()))
		}
	}
	if len(problems) > 0 {
		t.Fatalf("ApiVersions differs from Kafka 4.4's:\n%s", strings.Join(problems, "\n"))
	}
}
