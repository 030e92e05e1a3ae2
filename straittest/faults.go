package straittest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/storage"
)

// adminClientID is the client id of the package's own admin client, whose
// requests (the state accessors, Start's waits) no Rule intercepts.
const adminClientID = "straittest"

// Rule says which requests to intercept and what to do with them, as
// kfake's ControlKey does. A request matches when every field set matches:
// Key always; Broker, Topic, Partitions, Group when set (zero: any). Of
// the matching rules the oldest still active applies, once per request.
//
// What happens: Delay is waited first (later requests on that connection
// wait behind it, as behind a slow request); then Drop closes the
// connection without an answer; or Err answers the request with that
// error code in every error field of the response (each topic and
// partition the request names, or the top-level one when it names none);
// or Respond answers with what it returns (nil: the request goes on); or,
// with only Delay, the broker handles the request.
type Rule struct {
	Key    kmsg.Key
	Broker int32 // node.id; 0: any broker
	// Topic matches requests that name the topic (Produce, Fetch by name
	// or id, ListOffsets, OffsetForLeaderEpoch, Metadata, DeleteRecords,
	// OffsetCommit, OffsetFetch, TxnOffsetCommit, AddPartitionsToTxn,
	// DescribeConfigs, CreateTopics, DeleteTopics, CreatePartitions).
	Topic string
	// Partitions narrows Topic to these partitions; nil: any.
	Partitions []int32
	// Group matches requests of that consumer group (JoinGroup, SyncGroup,
	// Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, TxnOffsetCommit,
	// DescribeGroups, DeleteGroups, ConsumerGroupHeartbeat,
	// FindCoordinator for a group).
	Group string
	// Times is how many requests the rule applies to; 0: until removed.
	Times int

	Err     *kerr.Error
	Delay   time.Duration
	Drop    bool
	Respond func(kmsg.Request) kmsg.Response
}

// Interception is an active Rule, returned by Intercept.
type Interception struct {
	c    *Cluster
	rule Rule

	// Under c.faults.mu.
	count   int
	removed bool
}

// Count is how many requests the rule has applied to.
func (i *Interception) Count() int {
	i.c.faults.mu.Lock()
	defer i.c.faults.mu.Unlock()
	return i.count
}

// Remove ends the rule; requests already intercepted are not affected.
func (i *Interception) Remove() {
	c := i.c
	c.faults.mu.Lock()
	i.removed = true
	c.faults.rules = slices.DeleteFunc(c.faults.rules, func(r *Interception) bool { return r == i })
	c.faults.mu.Unlock()
	c.syncRequestHooks()
}

// faultState is a Cluster's interceptions and isolated brokers.
type faultState struct {
	mu       sync.Mutex
	rules    []*Interception
	topicIDs map[[16]byte]string // resolved by Metadata, for Fetch by topic id
	isolated map[int32]bool
}

// Intercept adds a rule for requests to the cluster's brokers (see Rule)
// and returns it; it applies until it has applied Times times or is
// removed, and is removed when the test ends. The package's own requests
// (the state accessors) are never intercepted. The test fails if the rule
// has no Key or names a broker the cluster does not have.
func (c *Cluster) Intercept(r Rule) *Interception {
	c.tb.Helper()
	if r.Broker != 0 {
		c.Broker(r.Broker)
	}
	if r.Err == nil && r.Respond == nil && !r.Drop && r.Delay == 0 {
		c.tb.Fatalf("straittest: Intercept: the rule does nothing (no Err, Respond, Drop or Delay)")
	}
	i := &Interception{c: c, rule: r}
	c.faults.mu.Lock()
	c.faults.rules = append(c.faults.rules, i)
	c.faults.mu.Unlock()
	c.syncRequestHooks()
	c.tb.Cleanup(i.Remove)
	return i
}

// syncRequestHooks sets the request hook on every running broker while a
// rule exists and removes it once none does, so that a test without rules
// costs the brokers nothing.
func (c *Cluster) syncRequestHooks() {
	for _, b := range c.brokers {
		if srv := b.Server(); srv != nil {
			c.installRequestHook(b.id, srv)
		}
	}
}

// installRequestHook sets (or removes) broker id's request hook, as the
// rules say.
func (c *Cluster) installRequestHook(id int32, srv *broker.Server) {
	c.faults.mu.Lock()
	active := len(c.faults.rules) > 0
	c.faults.mu.Unlock()
	if !active {
		srv.SetRequestHook(nil)
		return
	}
	srv.SetRequestHook(func(info broker.RequestInfo) broker.RequestAction { return c.intercept(id, info) })
}

// intercept is broker id's request hook.
func (c *Cluster) intercept(id int32, info broker.RequestInfo) broker.RequestAction {
	if info.ClientID == adminClientID {
		return broker.RequestAction{}
	}
	refs := requestRefs(info.Body)
	if refs.topicIDs > 0 {
		c.resolveTopicIDs(refs)
	}
	c.faults.mu.Lock()
	var hit *Interception
	for _, i := range c.faults.rules {
		if !i.removed && c.matchLocked(i.rule, id, info, refs) {
			hit = i
			break
		}
	}
	if hit == nil {
		c.faults.mu.Unlock()
		return broker.RequestAction{}
	}
	hit.count++
	done := hit.rule.Times > 0 && hit.count >= hit.rule.Times
	if done {
		hit.removed = true
		c.faults.rules = slices.DeleteFunc(c.faults.rules, func(r *Interception) bool { return r == hit })
	}
	r := hit.rule
	c.faults.mu.Unlock()
	if done {
		c.syncRequestHooks() // the last rule gone: no hook left
	}

	act := broker.RequestAction{Delay: r.Delay, Drop: r.Drop}
	switch {
	case r.Drop:
	case r.Err != nil:
		act.Response = ErrorResponse(info.Body, r.Err.Code)
	case r.Respond != nil:
		act.Response = r.Respond(info.Body)
	}
	return act
}

// matchLocked reports whether r matches a request to broker id.
func (c *Cluster) matchLocked(r Rule, id int32, info broker.RequestInfo, refs refs) bool {
	if int16(r.Key) != info.Key || (r.Broker != 0 && r.Broker != id) {
		return false
	}
	if r.Group != "" && !slices.Contains(refs.groups, r.Group) {
		return false
	}
	if r.Topic == "" {
		return true
	}
	for _, t := range refs.topics {
		name := t.name
		if name == "" {
			name = c.faults.topicIDs[t.id]
		}
		if name != r.Topic {
			continue
		}
		if r.Partitions == nil || t.partitions == nil {
			return true
		}
		for _, p := range t.partitions {
			if slices.Contains(r.Partitions, p) {
				return true
			}
		}
	}
	return false
}

// resolveTopicIDs learns the names of the topic ids refs holds that are
// not known yet, with a Metadata request of the package's admin client
// (which no rule intercepts).
func (c *Cluster) resolveTopicIDs(refs refs) {
	c.faults.mu.Lock()
	missing := false
	for _, t := range refs.topics {
		if t.name == "" {
			if _, ok := c.faults.topicIDs[t.id]; !ok {
				missing = true
			}
		}
	}
	c.faults.mu.Unlock()
	if !missing {
		return
	}
	if _, err := c.adminClient(); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, c.adminCl)
	if err != nil {
		return
	}
	c.faults.mu.Lock()
	defer c.faults.mu.Unlock()
	if c.faults.topicIDs == nil {
		c.faults.topicIDs = map[[16]byte]string{}
	}
	for _, t := range resp.Topics {
		if t.Topic != nil {
			c.faults.topicIDs[t.TopicID] = *t.Topic
		}
	}
}

// Kill stops broker id as a crash would: no controlled shutdown, its
// connections closed at once, its registration lease left to expire
// (broker.session.timeout.ms, 3 s in the test defaults), so its
// leaderships move only then, and its embedded etcd member stopped without
// handing its etcd leadership over. It keeps its directory and port for
// Restart. The test fails if the broker reports an error as it stops.
func (c *Cluster) Kill(id int32) {
	c.tb.Helper()
	b := c.Broker(id)
	b.mu.Lock()
	srv := b.srv
	b.srv, b.paused = nil, false
	b.mu.Unlock()
	if srv == nil {
		return
	}
	if err := srv.Kill(); err != nil {
		c.tb.Fatalf("straittest: killing broker %d: %v", id, err)
	}
}

// Pause makes broker id stop as a SIGSTOP'd process would look: its
// connections stay open but it reads and answers nothing, its replica
// fetchers stop, and its registration lease is no longer kept alive, so
// after broker.session.timeout.ms the cluster fences it (its leaderships
// move, it leaves the ISRs). Resume undoes it; Stop, Kill and Restart
// end it too. The state accessors (Partition, WaitISR, ...) do not ask a
// paused broker. The test fails if the broker does not run.
func (c *Cluster) Pause(id int32) {
	c.tb.Helper()
	c.setPaused(id, true)
}

// Resume continues a paused broker: it answers again, its fetchers catch
// up, and it registers again (a new lease). The test fails if the broker
// does not run.
func (c *Cluster) Resume(id int32) {
	c.tb.Helper()
	c.setPaused(id, false)
}

func (c *Cluster) setPaused(id int32, paused bool) {
	c.tb.Helper()
	b := c.Broker(id)
	b.mu.Lock()
	srv := b.srv
	if srv != nil {
		b.paused = paused
	}
	b.mu.Unlock()
	switch {
	case srv == nil:
		c.tb.Fatalf("straittest: broker %d is not running", id)
	case paused:
		srv.Pause()
	default:
		srv.Resume()
	}
}

// Isolate cuts broker id off from the other brokers: neither side's
// requests to the other (replica fetches, transaction markers) get
// through, and the connections between them close. Clients and etcd
// still reach it: a partitioned leader keeps its lease, its followers fall
// out of its ISR after replica.lag.time.max.ms. Heal undoes it. A broker
// restarted meanwhile stays isolated.
func (c *Cluster) Isolate(id int32) {
	c.tb.Helper()
	c.Broker(id)
	c.faults.mu.Lock()
	if c.faults.isolated == nil {
		c.faults.isolated = map[int32]bool{}
	}
	c.faults.isolated[id] = true
	c.faults.mu.Unlock()
	c.syncPeerFilters()
}

// IsolateEtcd cuts broker id off from etcd: its connections to etcd close
// and new ones are refused, so its registration lease is not kept alive
// and expires after broker.session.timeout.ms (the cluster then fences it
// and moves its leaderships), and it sees no metadata change. Clients and
// the other brokers still reach it. Heal undoes it; the broker then
// registers again. The state accessors do not ask it meanwhile (its
// metadata is stale). It needs the shared etcd, the default (the test fails with WithEmbeddedEtcd):
// cutting an embedded etcd member off from its peers is not supported.
func (c *Cluster) IsolateEtcd(id int32) {
	c.tb.Helper()
	b := c.Broker(id)
	if b.etcdProxy == nil {
		c.tb.Fatalf("straittest: IsolateEtcd needs the shared etcd, not WithEmbeddedEtcd (an embedded etcd member cannot be cut off from its peers)")
	}
	b.mu.Lock()
	b.etcdCut = true
	b.mu.Unlock()
	b.etcdProxy.setCut(true)
}

// Heal ends Isolate and IsolateEtcd for broker id (every broker when id
// is 0).
func (c *Cluster) Heal(id int32) {
	c.faults.mu.Lock()
	if id == 0 {
		clear(c.faults.isolated)
	} else {
		delete(c.faults.isolated, id)
	}
	c.faults.mu.Unlock()
	c.syncPeerFilters()
	for _, b := range c.brokers {
		if (id == 0 || b.id == id) && b.etcdProxy != nil {
			b.etcdProxy.setCut(false)
			b.mu.Lock()
			b.etcdCut = false
			b.mu.Unlock()
		}
	}
}

// JumpClock moves broker id's wall clock by d (back when d is negative),
// as an NTP step or a host with a skewed clock would; jumps add up.
// Everything Kafka times on its wall clock moves with it on that broker:
// LogAppendTime, retention.ms and segment.ms, ISR lag
// (replica.lag.time.max.ms) when it leads, transaction timeouts,
// producer-id and delegation-token expiry, SASL session lifetimes,
// fetch-session eviction. Timers (group sessions, request timeouts) run on
// the monotonic clock, as Kafka's. The offset is the host's: it stays
// across Stop and Restart, until ResetClock. The broker need not run.
func (c *Cluster) JumpClock(id int32, d time.Duration) {
	c.tb.Helper()
	c.Broker(id).clock.Jump(d)
}

// ResetClock puts broker id's clock (every broker's when id is 0) back in
// step with the system's.
func (c *Cluster) ResetClock(id int32) {
	c.tb.Helper()
	for _, b := range c.brokers {
		if id == 0 || b.id == id {
			b.clock.Set(0)
		}
	}
	if id != 0 {
		c.Broker(id) // fails the test for an unknown id
	}
}

// ClockOffset is how far broker b's clock is from the system's (JumpClock).
func (b *Broker) ClockOffset() time.Duration { return b.clock.Offset() }

// syncPeerFilters sets each running broker's peer filter from the
// isolated set.
func (c *Cluster) syncPeerFilters() {
	for _, b := range c.brokers {
		if srv := b.Server(); srv != nil {
			c.installPeerFilter(b.id, srv)
		}
	}
}

// installPeerFilter sets broker id's peer filter: an isolated broker
// reaches no one, the others do not reach it. None when nothing is
// isolated.
func (c *Cluster) installPeerFilter(id int32, srv *broker.Server) {
	c.faults.mu.Lock()
	n := len(c.faults.isolated)
	c.faults.mu.Unlock()
	if n == 0 {
		srv.SetPeerFilter(nil)
		return
	}
	srv.SetPeerFilter(func(to int32) bool {
		c.faults.mu.Lock()
		defer c.faults.mu.Unlock()
		return to != id && (c.faults.isolated[id] || c.faults.isolated[to])
	})
}

// installHooks gives a broker about to start the cluster's current
// faults (start).
func (c *Cluster) installHooks(id int32, srv *broker.Server) {
	c.installRequestHook(id, srv)
	c.installPeerFilter(id, srv)
}

// PowerLoss takes broker id down as a power cut would: its disk stops
// making anything durable (fsyncs succeed and keep nothing, so it cannot
// flush on its way down), the broker is killed as Kill does, and the disk
// then drops every write not fsynced before the cut and every file
// creation, rename and removal whose directory was not fsynced after it
// (storage.StrictFS), which it reports. Restart brings it back on what is
// left. The test fails without WithPowerLossDisks.
func (c *Cluster) PowerLoss(id int32) storage.CrashReport {
	c.tb.Helper()
	b := c.Broker(id)
	if b.disk == nil || b.disk.strict == nil {
		c.tb.Fatalf("straittest: PowerLoss needs WithPowerLossDisks")
	}
	b.disk.strict.CutPower()
	c.Kill(id)
	r, err := b.disk.strict.Crash()
	if err != nil {
		c.tb.Fatalf("straittest: dropping broker %d's unsynced data: %v", id, err)
	}
	return r
}
