package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"time"

	"github.com/strait/strait/bench/inturn"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawRequest sends one request with a v1 (non-flexible) header on conn and
// returns the response body after the correlation id. Only the probes use
// it: they must not pay a client's dial backoff or version negotiation.
func rawRequest(conn net.Conn, req kmsg.Request) ([]byte, error) {
	if req.IsFlexible() {
		return nil, errors.New("rawRequest: flexible versions need header v2")
	}
	const clientID = "strait-bench"
	frame := make([]byte, 4, 64)
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.Key()))
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.GetVersion()))
	frame = binary.BigEndian.AppendUint32(frame, 1) // correlation id
	frame = binary.BigEndian.AppendUint16(frame, uint16(len(clientID)))
	frame = append(frame, clientID...)
	frame = req.AppendTo(frame)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	if _, err := conn.Write(frame); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 16<<20 {
		return nil, fmt.Errorf("response size %d", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return nil, err
	}
	return body[4:], nil
}

// metadataProbe is "ready": a Metadata v8 request (no topics) on a new
// connection answered with at least one broker.
func metadataProbe(addr string, timeout time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 8
	req.Topics = []kmsg.MetadataRequestTopic{}
	body, err := rawRequest(conn, req)
	if err != nil {
		return err
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 8
	if err := resp.ReadFrom(body); err != nil {
		return err
	}
	if len(resp.Brokers) == 0 {
		return errors.New("metadata lists no broker")
	}
	return nil
}

// openIdleConnections opens n connections to addr and sends ApiVersions v0
// on each, as a client does first, so the broker has set each connection up.
func openIdleConnections(addr string, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, 0, n)
	for range n {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return conns, err
		}
		conns = append(conns, conn)
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 0
		if _, err := rawRequest(conn, req); err != nil {
			return conns, err
		}
		_ = conn.SetDeadline(time.Time{})
	}
	return conns, nil
}

// FetchLatency is the time of single Fetch requests (1 MiB at most, no wait)
// at random offsets near the start and near the end of one large partition.
type FetchLatency struct {
	LogBytes     int64   `json:"log_bytes"`
	Records      int64   `json:"records"`
	WriteSeconds float64 `json:"write_seconds"`
	Samples      int     `json:"samples"`
	HeadP50Ms    float64 `json:"head_p50_ms"`
	HeadP99Ms    float64 `json:"head_p99_ms"`
	HeadMaxMs    float64 `json:"head_max_ms"`
	TailP50Ms    float64 `json:"tail_p50_ms"`
	TailP99Ms    float64 `json:"tail_p99_ms"`
	TailMaxMs    float64 `json:"tail_max_ms"`
}

// headTail writes logBytes of 1 KiB records into a one-partition topic, then
// times samples fetches at offsets in the oldest 1% of the log (the head:
// first segment, start of its index) and as many in the newest 1% (the tail,
// in the active segment), alternating between the two.
func headTail(ctx context.Context, brokers []string, logBytes int64, samples int, pool *valuePool) (FetchLatency, error) {
	var out FetchLatency
	topic := fmt.Sprintf("bench-headtail-%d", time.Now().UnixNano())
	adm := kadm.NewClient(mustClient(brokers))
	defer adm.Close()
	if err := createTopic(ctx, adm, topic, 1); err != nil {
		return out, err
	}
	const size = 1024
	s := defaultScenario()
	s.Partitions, s.Acks, s.RecordSize = 1, "1", size
	s.Duration = Dur(time.Hour)
	s.MaxRecords = logBytes / size
	prods, err := newProducers(ctx, brokers, topic, s, 5*time.Millisecond, pool)
	if err != nil {
		return out, err
	}
	w, err := produceMax(ctx, prods, s, pool)
	closeAll(prods)
	if err != nil {
		return out, err
	}
	out.WriteSeconds = w.Seconds
	ends, err := endOffsets(ctx, adm, topic)
	if err != nil {
		return out, err
	}
	end := ends[topic][0]
	out.Records = end
	out.LogBytes = w.Bytes
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return out, err
	}
	topicID := td[topic].ID

	cl := mustClient(brokers)
	defer cl.Close()
	window := max(end/100, 2000)
	rng := rand.New(rand.NewPCG(3, 4))
	var head, tail []int64
	for i := range 2 * samples {
		var off int64
		if i%2 == 0 {
			off = rng.Int64N(window)
		} else {
			off = end - window + rng.Int64N(window-1000)
		}
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 0
		req.MinBytes = 1
		req.MaxBytes = 1 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = 0
		rp.FetchOffset = off
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		start := time.Now()
		kresp, err := cl.Request(ctx, req)
		took := int64(time.Since(start))
		if err != nil {
			return out, fmt.Errorf("fetch at %d: %w", off, err)
		}
		resp := kresp.(*kmsg.FetchResponse)
		if err := fetchError(resp); err != nil {
			return out, fmt.Errorf("fetch at %d: %w", off, err)
		}
		if i%2 == 0 {
			head = append(head, took)
		} else {
			tail = append(tail, took)
		}
	}
	slices.Sort(head)
	slices.Sort(tail)
	out.Samples = samples
	out.HeadP50Ms, out.HeadP99Ms, out.HeadMaxMs = pct(head, 0.5), pct(head, 0.99), ms(head[len(head)-1])
	out.TailP50Ms, out.TailP99Ms, out.TailMaxMs = pct(tail, 0.5), pct(tail, 0.99), ms(tail[len(tail)-1])
	return out, nil
}

func fetchError(resp *kmsg.FetchResponse) error {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
			if len(p.RecordBatches) == 0 {
				return errors.New("no records returned")
			}
		}
	}
	return nil
}

// ScaleStep is one topic of Partitions partitions added to a broker that
// already hosts the earlier steps' topics.
type ScaleStep struct {
	Partitions      int     `json:"partitions"`
	TotalPartitions int     `json:"total_partitions"`
	CreateSeconds   float64 `json:"create_seconds"` // CreateTopics until every partition has a leader
	// FirstWriteSeconds is one record to every partition, acks=1, before
	// the timed phase (a partition's first append is slower, see touchPartitions).
	FirstWriteSeconds float64 `json:"first_write_seconds"`
	IdleRSS           int64   `json:"idle_rss"` // after creation, before producing
	// FreshProduce is the first produce phase, right after the first write;
	// Produce the second, right after it, when the topic has settled.
	FreshProduce Throughput `json:"fresh_produce"`
	Produce      Throughput `json:"produce"`
	Consume      Throughput `json:"consume"`
	LoadRSS      int64      `json:"load_rss"` // peak VmRSS while producing and consuming
	// PartitionsWritten is how many of the step's partitions the settled
	// produce phase wrote to (end offsets before and after): all of them
	// unless the load left some out.
	PartitionsWritten int `json:"partitions_written,omitempty"`
	// StopSeconds, on a broker's last step only, is SIGTERM to exit with
	// every step's partitions (StopKilled: it was killed after stopGrace).
	StopSeconds float64 `json:"stop_seconds,omitempty"`
	StopKilled  bool    `json:"stop_killed,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// stopGrace is how long the scaling measurement waits for a clean shutdown.
const stopGrace = 2 * time.Minute

// maxPartitionsPerTopic splits a scaling step into topics of at most this
// many partitions: Kafka's controller refuses a request that needs more than
// 10,000 metadata records (a topic of n partitions takes n+1), and Strait
// refuses it alike.
const maxPartitionsPerTopic = 1000

// scaleTopics creates n partitions as topics of maxPartitionsPerTopic, one
// CreateTopics request each, and times it until every partition serves;
// each topic may take limit.
func scaleTopics(ctx context.Context, brokers []string, n int, limit time.Duration) ([]string, time.Duration, error) {
	adm := kadm.NewClient(mustClient(brokers))
	defer adm.Close()
	start := time.Now()
	var topics []string
	for i := 0; n > 0; i++ {
		parts := min(n, maxPartitionsPerTopic)
		n -= parts
		topic := fmt.Sprintf("bench-scale-%d-%d", time.Now().UnixNano(), i)
		topics = append(topics, topic)
		resp, err := adm.CreateTopic(ctx, int32(parts), 1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return topics, 0, fmt.Errorf("create topic %d: %w", i, err)
		}
		if err := waitLeaders(ctx, adm, topic, parts, limit); err != nil {
			return topics, 0, err
		}
	}
	return topics, time.Since(start), nil
}

// The scaling steps' loads (compare -scale-partitioner).
const (
	// scaleRoundRobin: every record to the next partition, so with n
	// partitions a partition's batch holds about 1/n of what the producer
	// buffers (about 2 records at 10,000).
	scaleRoundRobin = "round-robin"
	// scaleSticky: 16 KiB to one partition, then the next in order
	// (inturn.Partitioner), the batches of the Java client's and
	// franz-go's default partitioners for records without a key; a phase
	// runs on past its length until every partition has had its turn.
	scaleSticky = "sticky"
)

// scaleLoad produces 1 KiB records over every partition of the topics
// (acks=1, no compression) for d, partitioned as partitioner (scaleSticky
// or scaleRoundRobin) says, then (if consume) reads them back. written is
// how many partitions the produce phase wrote to, counted only with consume
// (from the end offsets the consume phase reads between).
func scaleLoad(ctx context.Context, brokers []string, topics []string, d time.Duration, partitioner string, pool *valuePool, consume bool) (p, c Throughput, written int, err error) {
	s := defaultScenario()
	s.Acks, s.Partitioner, s.Duration, s.Topics = "1", scaleRoundRobin, Dur(d), topics
	adm := kadm.NewClient(mustClient(brokers))
	defer adm.Close()
	if partitioner == scaleSticky {
		s.Partitioner = partitionerStickyInTurn
	}
	prods, err := newProducers(ctx, brokers, topics[0], s, 5*time.Millisecond, pool)
	if err != nil {
		return p, c, 0, err
	}
	from, err := endOffsets(ctx, adm, topics...)
	if err != nil {
		closeAll(prods)
		return p, c, 0, err
	}
	if s.Partitioner == partitionerStickyInTurn {
		// Records go to the topics in turn, so each topic's partitioner
		// needs its turn on each of its partitions, however few it has.
		widest := 0
		for _, parts := range from {
			widest = max(widest, len(parts))
		}
		s.MinRecords = int64(inturn.MinRecords(len(topics), widest, inturn.TurnRecords(s.RecordSize)))
	}
	p, err = produceMax(ctx, prods, s, pool)
	closeAll(prods)
	if err != nil || !consume {
		return p, c, 0, err
	}
	to, err := endOffsets(ctx, adm, topics...)
	if err != nil {
		return p, c, 0, err
	}
	written = partitionsWritten(from, to)
	c, err = consumeRange(ctx, brokers, from, to, 0)
	return p, c, written, err
}

// partitionsWritten counts the partitions whose end offset moved from from
// to to.
func partitionsWritten(from, to offsets) int {
	n := 0
	for t, ends := range to {
		for p, end := range ends {
			if end > from[t][p] {
				n++
			}
		}
	}
	return n
}
