package quota

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Kafka's window arithmetic: 400 bytes a second for 10 s, then 2300 at
// once, under a 500 B/s quota measured over 11 windows of 1 s: 6300 bytes
// over 10 s is 630 B/s, 26% over the quota, so the client waits 26% of the
// 10 s window: 2600 ms (QuotaUtils.throttleTime).
func TestThrottleTimeAsKafka(t *testing.T) {
	s := NewSnapshot(map[Entity]Values{{User: DefaultName()}: {ProducerByteRate: 500}})
	m := NewManager(ProducerByteRate, DefaultConfig)
	base := time.UnixMilli(1_000_000)
	for i := 0; i < 10; i++ {
		if d := m.Record(s, "alice", "app", 400, base.Add(time.Duration(i)*time.Second)); d != 0 {
			t.Fatalf("record %d under the quota throttled %v", i, d)
		}
	}
	if d := m.Record(s, "alice", "app", 2300, base.Add(10*time.Second)); d != 2600*time.Millisecond {
		t.Fatalf("throttle %v, want 2600ms", d)
	}
	// Another user under the same default quota has a rate of its own.
	if d := m.Record(s, "bob", "app", 4000, base.Add(10*time.Second)); d != 0 {
		t.Fatalf("bob throttled %v for alice's bytes", d)
	}
	// Taken back (a throttled Fetch), the bytes no longer count.
	m.Unrecord(s, "alice", "app", 2300, base.Add(10*time.Second))
	if d := m.Record(s, "alice", "app", 0, base.Add(10*time.Second)); d != 0 {
		t.Fatalf("after unrecord: throttled %v", d)
	}
	// Samples older than 11 windows are forgotten.
	if d := m.Record(s, "alice", "app", 4900, base.Add(40*time.Second)); d != 0 {
		t.Fatalf("old samples still counted: %v", d)
	}
}

// No quota for a key: nothing recorded, never throttled.
func TestNoQuotaNoThrottle(t *testing.T) {
	s := NewSnapshot(map[Entity]Values{{User: Named("alice")}: {ConsumerByteRate: 1}})
	m := NewManager(ProducerByteRate, DefaultConfig)
	if d := m.Record(s, "alice", "x", 1e12, time.Now()); d != 0 {
		t.Fatal(d)
	}
	if len(m.rates) != 0 {
		t.Fatal("recorded without a quota")
	}
}

// Kafka's precedence, from users/<user>/clients/<client-id> down to
// clients/<default>, and the tags that decide which clients share a rate.
func TestResolvePrecedence(t *testing.T) {
	u, c, du, dc := Named("alice"), Named("app"), DefaultName(), DefaultName()
	all := []struct {
		e    Entity
		tags Tags
	}{
		{Entity{User: u, ClientID: c}, Tags{User: "alice", ClientID: "app"}},
		{Entity{User: u, ClientID: dc}, Tags{User: "alice", ClientID: "app"}},
		{Entity{User: u}, Tags{User: "alice"}},
		{Entity{User: du, ClientID: c}, Tags{User: "alice", ClientID: "app"}},
		{Entity{User: du, ClientID: dc}, Tags{User: "alice", ClientID: "app"}},
		{Entity{User: du}, Tags{User: "alice"}},
		{Entity{ClientID: c}, Tags{ClientID: "app"}},
		{Entity{ClientID: dc}, Tags{ClientID: "app"}},
	}
	for i := range all {
		m := map[Entity]Values{}
		for j, x := range all[i:] {
			m[x.e] = Values{ProducerByteRate: float64(100 + i + j)}
		}
		tags, v, ok := NewSnapshot(m).Resolve(ProducerByteRate, "alice", "app")
		if !ok || v != float64(100+i) || tags != all[i].tags {
			t.Errorf("with %v and below: %v %v %v, want %v %v", all[i].e, tags, v, ok, all[i].tags, 100+i)
		}
	}
	// An entity without this key plays no part (Kafka keeps the entities
	// of each quota type apart).
	s := NewSnapshot(map[Entity]Values{
		{User: u}:     {ConsumerByteRate: 5},
		{ClientID: c}: {ProducerByteRate: 7},
	})
	if tags, v, ok := s.Resolve(ProducerByteRate, "alice", "app"); !ok || v != 7 || tags != (Tags{ClientID: "app"}) {
		t.Errorf("alice/app: %v %v %v, want clients/app's 7", tags, v, ok)
	}
}

func TestPlanValidation(t *testing.T) {
	alice := "alice"
	none := func(Entity) Values { return nil }
	res, ch := Plan([]Alteration{
		{Parts: []Part{{TypeUser, &alice}}, Ops: []Op{{Key: ProducerByteRate, Value: 10}, {Key: ProducerByteRate, Value: 20}}},
		{Parts: []Part{{TypeUser, nil}}, Ops: []Op{{Key: RequestPercentage, Value: 0.5}}},
		{Parts: []Part{{TypeClientID, nil}}, Ops: []Op{{Key: ConsumerByteRate, Remove: true}}},
	}, none)
	if len(res) != 3 || res[0].Err == nil || res[0].Err.Code != kerr.InvalidRequest.Code ||
		res[0].Err.Message != "Ignoring duplicate entity ClientQuotaEntity(entries={user=alice})" {
		t.Fatalf("duplicate key: %+v", res[0].Err)
	}
	if res[1].Err != nil || res[2].Err != nil {
		t.Fatalf("valid: %+v %+v", res[1].Err, res[2].Err)
	}
	// Removing a key that is not set changes nothing.
	if len(ch) != 1 || ch[0].Entity != (Entity{User: DefaultName()}) || ch[0].Values[RequestPercentage] != 0.5 {
		t.Fatalf("changes: %+v", ch)
	}
	ip := "127.0.0.1"
	res, _ = Plan([]Alteration{{Parts: []Part{{TypeIP, &ip}}, Ops: []Op{{Key: ConnectionCreationRate, Value: 3e9}}}}, none)
	if res[0].Err == nil || res[0].Err.Message != "Proposed value for connection_creation_rate is too large for an INT." {
		t.Fatalf("int overflow: %+v", res[0].Err)
	}
	res, _ = Plan([]Alteration{{Parts: nil, Ops: []Op{{Key: ProducerByteRate, Value: 1}}}}, none)
	if res[0].Err == nil || res[0].Err.Message != "Invalid empty client quota entity" {
		t.Fatalf("empty entity: %+v", res[0].Err)
	}
}

// Rates and buckets idle long enough to no longer matter are forgotten;
// past maxEntries, new tags share one entry.
func TestIdleEntriesForgotten(t *testing.T) {
	s := NewSnapshot(map[Entity]Values{{ClientID: DefaultName()}: {ProducerByteRate: 100, ControllerMutationRate: 1}})
	m := NewManager(ProducerByteRate, DefaultConfig)
	base := time.UnixMilli(5_000_000)
	m.Record(s, "u", "a", 10, base)
	m.Record(s, "u", "b", 10, base.Add(11*time.Second))
	if _, ok := m.rates[Tags{ClientID: "a"}]; ok {
		t.Fatal("a rate idle for 11 windows is kept")
	}
	if len(m.rates) != 1 {
		t.Fatalf("%d rates", len(m.rates))
	}
	for i := 0; i < maxEntries+10; i++ {
		m.Record(s, "u", "c"+strconv.Itoa(i), 1, base.Add(12*time.Second))
	}
	if len(m.rates) != maxEntries+1 {
		t.Fatalf("%d rates, want at most %d", len(m.rates), maxEntries+1)
	}

	mm := NewMutationManager(DefaultConfig)
	q := mm.New(s, "u", "a", false)
	q.Record(20, base) // 11 tokens - 20: 9 in debt
	q2 := mm.New(s, "u", "b", false)
	q2.Record(1, base.Add(12*time.Second))
	if _, ok := mm.buckets[Tags{ClientID: "a"}]; !ok {
		t.Fatal("a bucket still in debt was forgotten")
	}
	q2.Record(1, base.Add(40*time.Second))
	if _, ok := mm.buckets[Tags{ClientID: "a"}]; ok {
		t.Fatal("a refilled bucket is kept")
	}
}
