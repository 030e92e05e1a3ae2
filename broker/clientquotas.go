package broker

// Client quota enforcement, as Kafka's ClientQuotaManager and
// RequestQuotaManager with KIP-219's throttling: a request's bytes (Produce,
// the request's size) or a response's (Fetch, the records returned) are
// recorded against the quota that applies to the connection's principal and
// the request's client id (quota.Snapshot.Resolve); past the quota the
// response is sent at once with throttle_time_ms, and the connection's next
// request is not read until that time has passed (the channel is muted).
// The quotas come from the controller's watch cache, so a change made with
// AlterClientQuotas applies to the next request on every broker.

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/config"
	"github.com/strait/strait/protocol"
	"github.com/strait/strait/quota"
)

// clientQuotas holds one rate manager per quota type.
type clientQuotas struct {
	produce, fetch, request *quota.Manager
	mutation                *quota.MutationManager
	connections             *quota.Manager // connection_creation_rate by IP
	brokerConns             *quota.Manager // max.connection.creation.rate
	maxConnRate             float64        // max.connection.creation.rate, if connRateOn
	connRateOn              bool
	protected               string       // the listener exempt from maxConnRate
	heldConns               atomic.Int64 // throttled connections not yet closed
}

func newClientQuotas(c *config.Config) *clientQuotas {
	qc := c.ClientQuotas
	cfg := quota.Config{Samples: int(qc.WindowNum), WindowSeconds: int(qc.WindowSizeSeconds)}
	q := &clientQuotas{
		brokerConns: quota.NewManager("max.connection.creation.rate", cfg),
		produce:     quota.NewManager(quota.ProducerByteRate, cfg),
		fetch:       quota.NewManager(quota.ConsumerByteRate, cfg),
		request:     quota.NewManager(quota.RequestPercentage, cfg),
		connections: quota.NewManager(quota.ConnectionCreationRate, cfg),
		mutation:    quota.NewMutationManager(quota.Config{Samples: int(qc.ControllerWindowNum), WindowSeconds: int(qc.ControllerWindowSizeSeconds)}),
	}
	if qc.MaxConnectionCreationRate != 1<<31-1 {
		q.maxConnRate, q.connRateOn = float64(qc.MaxConnectionCreationRate), true
	}
	if len(c.Network.Listeners) > 1 {
		q.protected = c.Network.InterBrokerListenerName
	}
	return q
}

// throttlingQuotaExceeded is Kafka's message for THROTTLING_QUOTA_EXCEEDED.
const throttlingQuotaExceeded = "The throttling quota has been exceeded."

// mutationQuota is the request's controller_mutation_rate quota (nil:
// none): strict from version strictSince, which can carry
// THROTTLING_QUOTA_EXCEEDED, permissive before (Kafka's newQuotaFor).
func (c *conn) mutationQuota(x *exchange, strictSince int16) *quota.Mutation {
	qs := c.srv.ctrl.ClientQuotas()
	if !qs.Has(quota.ControllerMutationRate) {
		return nil
	}
	return c.srv.clientQuotas.mutation.New(qs, c.quotaUser(), clientID(x), x.req.Version >= strictSince)
}

// mutationExceeded reports that a strict quota refuses the next operation.
func (c *conn) mutationExceeded(q *quota.Mutation) bool {
	return q != nil && q.Exceeded(c.srv.clock.Now())
}

// recordMutation takes the partitions an operation created or deleted.
func (c *conn) recordMutation(q *quota.Mutation, partitions int) {
	if q != nil {
		q.Record(float64(partitions), c.srv.clock.Now())
	}
}

// throttleMutations puts the quota's throttle in the response and mutes
// the connection for it (sendResponseMaybeThrottleWithControllerQuota).
func (c *conn) throttleMutations(x *exchange, q *quota.Mutation) {
	if q != nil {
		c.throttle(x, q.Throttle(c.srv.clock.Now()))
	}
}

// quotaUser is the user component of the connection's quota entity: the
// principal's name (ANONYMOUS on PLAINTEXT), as Kafka's session.sanitizedUser
// before sanitizing.
func (c *conn) quotaUser() string { return c.principal().Name }

// nanosToPercentage is Kafka's ClientQuotaManager.NanosToPercentagePerSecond:
// request_percentage counts handling time as a percentage of one second.
const nanosToPercentage = 100.0 / 1e9

// quotaExempt reports the requests Kafka exempts from request quotas: those
// of other brokers (cluster actions), and acks=0 Produce (no response to
// carry the throttle).
func quotaExempt(x *exchange) bool {
	switch kmsg.Key(x.req.Key) {
	case kmsg.Produce:
		return x.req.Body.(*kmsg.ProduceRequest).Acks == 0
	case kmsg.Fetch:
		f := x.req.Body.(*kmsg.FetchRequest)
		return f.ReplicaID >= 0 || (x.req.Version >= 15 && f.ReplicaState.ID >= 0)
	case kmsg.WriteTxnMarkers, kmsg.AlterPartition, kmsg.BrokerHeartbeat, kmsg.BrokerRegistration,
		kmsg.ControlledShutdown, kmsg.UpdateMetadata, kmsg.LeaderAndISR, kmsg.StopReplica:
		return true
	}
	return false
}

// beforeRequest runs before a request's handler: a Produce's size is
// recorded against producer_byte_rate, and the request against
// request_percentage; the longer throttle goes into the response and mutes
// the connection. It returns when the handling started, for afterRequest.
func (c *conn) beforeRequest(x *exchange, frameSize int) time.Time {
	qs := c.srv.ctrl.ClientQuotas()
	if qs.Len() == 0 {
		return time.Time{}
	}
	now := c.srv.clock.Now()
	cq := c.srv.clientQuotas
	user, client := c.quotaUser(), clientID(x)
	var throttle time.Duration
	if x.req.Key == int16(kmsg.Produce) {
		// KafkaApis records the request's size: the batches as the
		// client compressed them.
		throttle = cq.produce.Record(qs, user, client, float64(frameSize), now)
	}
	if qs.Has(quota.RequestPercentage) && !quotaExempt(x) {
		// The time of the handlers before this one was recorded after
		// each (afterRequest); a zero record measures the rate now.
		throttle = max(throttle, cq.request.Record(qs, user, client, 0, now))
	}
	c.throttle(x, throttle)
	if qs.Has(quota.RequestPercentage) {
		return now
	}
	return time.Time{}
}

// afterRequest records the handler's time against request_percentage (the
// synchronous part: a parked Fetch's wait costs no thread).
func (c *conn) afterRequest(x *exchange, start time.Time) {
	if start.IsZero() || quotaExempt(x) {
		return
	}
	qs := c.srv.ctrl.ClientQuotas()
	now := c.srv.clock.Now()
	c.srv.clientQuotas.request.Record(qs, c.quotaUser(), clientID(x), float64(now.Sub(start).Nanoseconds())*nanosToPercentage, now)
}

// throttle sets x's throttle time to at least d and mutes the connection
// for d from now (KIP-219: the response goes out at once, the next request
// waits).
func (c *conn) throttle(x *exchange, d time.Duration) {
	if d <= 0 {
		return
	}
	ms := int32(min(d.Milliseconds(), 1<<31-1))
	if ms > x.throttleMs {
		x.throttleMs = ms
	}
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitMuted holds the read loop while the connection is muted; false when
// the connection died meanwhile.
func (c *conn) waitMuted() bool {
	until := c.mutedUntil.Load()
	if until == 0 {
		return true
	}
	d := time.Until(time.Unix(0, until))
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.dead:
		return false
	case <-c.srv.closing:
		return true
	}
}

// applyThrottle writes x's throttle time into a response that carries one.
func (x *exchange) applyThrottle(resp kmsg.Response) {
	if x.throttleMs <= 0 {
		return
	}
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		if cur, _ := tr.Throttle(); cur >= x.throttleMs {
			return
		}
	}
	if st, ok := resp.(kmsg.SetThrottleResponse); ok {
		st.SetThrottle(x.throttleMs)
	}
}

// fetchQuota applies consumer_byte_rate to a consumer's Fetch response
// (its size, as KafkaApis.handleFetchRequest): past the quota the bytes are
// taken back and the response is answered empty (throttled reports true),
// the client fetching them again once the throttle has passed.
func (f *fetchOp) fetchQuota(chunks []protocol.Chunk) (throttled bool) {
	if f.replica >= 0 {
		return false
	}
	qs := f.srv.ctrl.ClientQuotas()
	if !qs.Has(quota.ConsumerByteRate) {
		return false
	}
	var size int64
	for _, ch := range chunks {
		size += ch.Size()
	}
	c, now := f.c, f.srv.clock.Now()
	user, client := c.quotaUser(), clientID(f.x)
	d := f.srv.clientQuotas.fetch.Record(qs, user, client, float64(size), now)
	if d <= 0 {
		return false
	}
	f.srv.clientQuotas.fetch.Unrecord(qs, user, client, float64(size), now)
	c.throttle(f.x, d)
	return true
}

// fetchQuotaMaxBytes caps a consumer's Fetch at what its quota allows in the
// quota's windows (Kafka's getMaxValueInQuotaWindow), so one response cannot
// exceed it by much.
func (f *fetchOp) fetchQuotaMaxBytes() {
	if f.replica >= 0 {
		return
	}
	qs := f.srv.ctrl.ClientQuotas()
	if !qs.Has(quota.ConsumerByteRate) {
		return
	}
	if m, ok := f.srv.clientQuotas.fetch.MaxValueInWindow(qs, f.c.quotaUser(), clientID(f.x)); ok {
		if m < float64(f.req.MaxBytes) || f.req.MaxBytes <= 0 {
			f.req.MaxBytes = int32(max(1, min(m, 1<<31-1)))
		}
	}
}

// maxHeldConns bounds the throttled connections held open at once; past it
// one is closed at once (a flood must not hold the broker's descriptors).
const maxHeldConns = 1024

// throttleConnection applies connection_creation_rate to a new connection
// from ip, as Kafka's ConnectionQuotas: past the IP's rate the connection is
// not served, and is closed once the throttle time (at most one quota
// window) has passed, so that a client reconnecting at once is slowed down.
// It reports whether nc was taken.
func (s *Server) throttleConnection(nc net.Conn, listener, ip string) bool {
	qs := s.ctrl.ClientQuotas()
	if !qs.Has(quota.ConnectionCreationRate) {
		return false
	}
	d := s.clientQuotas.connections.RecordConnection(qs, ip, s.clock.Now())
	if d <= 0 {
		return false
	}
	s.quotas.logRefused(s.logger, listener, ip, "connection_creation_rate")
	held := &s.clientQuotas.heldConns
	if held.Add(1) > maxHeldConns {
		held.Add(-1)
		nc.Close()
		return true
	}
	wait := func() {
		defer held.Add(-1)
		defer nc.Close()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.closing:
		}
	}
	if !s.bg.Go(wait) {
		held.Add(-1)
		nc.Close()
	}
	return true
}

// waitConnectionRate is max.connection.creation.rate as Kafka's
// ConnectionQuotas.waitForConnectionSlot: each new connection is counted,
// and past the rate the accept loop waits the throttle time (at most one
// window) before serving it; the inter-broker listener is exempt. False
// when the broker closes meanwhile.
func (s *Server) waitConnectionRate(listener string) bool {
	q := s.clientQuotas
	if !q.connRateOn || listener != "" && listener == q.protected {
		return true
	}
	d := q.brokerConns.RecordFixed(q.maxConnRate, 1, s.clock.Now())
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.closing:
		return false
	}
}
