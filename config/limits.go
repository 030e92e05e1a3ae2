package config

// Limits are the broker-wide bounds on the requests a broker holds in
// memory (issue 17: no client can make the broker allocate without bound).
type Limits struct {
	// QueuedMaxRequests is queued.max.requests (500, at least 1). Kafka
	// queues up to this many read requests for its handler threads across
	// the broker, and reads one request per connection at a time. Strait
	// has no shared queue (a connection's requests are handled on its own
	// goroutine), so the key bounds what each connection may have read and
	// not yet answered: min(queued.max.requests, 64).
	QueuedMaxRequests int32
	// QueuedMaxRequestBytes is queued.max.request.bytes (-1: unbounded, as
	// in Kafka; any value up to 0 is unbounded). When positive, the bytes of
	// requests read and not yet answered, over every connection, are kept
	// at about this bound: a connection whose next frame would start while
	// the broker holds this much stops reading (its client sees TCP
	// back-pressure) until responses are written. As Kafka's memory pool,
	// one frame may take the total past the bound when any room is left.
	QueuedMaxRequestBytes int64
}

func parseLimits(p *props) Limits {
	return Limits{
		QueuedMaxRequests:     p.intAtLeast("queued.max.requests", 1),
		QueuedMaxRequestBytes: p.long("queued.max.request.bytes"),
	}
}
