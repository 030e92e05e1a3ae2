package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/replication"
	"github.com/strait/strait/storage"
)

// ensureInternalTopic returns a coordinator's internal topic, creating it on
// first use (Kafka creates __consumer_offsets and __transaction_state when a
// client first asks for their coordinator). mu keeps this broker to one
// creation at a time; another broker creating it meanwhile is no error. The
// replication factor is capped at the live brokers, so a small cluster can
// still start, and request builds the creation for that factor. loaded runs
// after a creation, so the coordinator loads the partitions it now leads.
func (s *Server) ensureInternalTopic(mu *sync.Mutex, name string, rf int16, request func(rf int16) controller.CreateTopicRequest, loaded func()) (controller.TopicInfo, error) {
	if t, ok := s.ctrl.Topic(name); ok {
		return t, nil
	}
	mu.Lock()
	defer mu.Unlock()
	if t, ok := s.ctrl.Topic(name); ok {
		return t, nil
	}
	if live := int16(len(s.ctrl.Brokers())); live > 0 && rf > live {
		rf = live
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := request(rf)
	req.Name, req.ReplicationFactor, req.Internal = name, rf, true
	t, err := s.ctrl.CreateTopic(ctx, req)
	if err != nil {
		if t, ok := s.ctrl.Topic(name); ok {
			return t, nil // created by another broker meanwhile
		}
		return controller.TopicInfo{}, err
	}
	s.logger.Info("created internal topic", "topic", name, "partitions", len(t.Partitions), "replication_factor", rf)
	loaded()
	return t, nil
}

// internalTopicLog is what the group and transaction coordinators need of
// their internal topic (__consumer_offsets, __transaction_state): its
// partition count, appends to the partitions this broker leads, and reading
// a partition back batch by batch when the coordinator loads it.
type internalTopicLog struct {
	srv        *Server
	topic      string
	loadBuffer int64 // offsets.load.buffer.size / transaction.state.log.load.buffer.size
}

func (o *internalTopicLog) Partitions() int32 {
	t, ok := o.srv.ctrl.Topic(o.topic)
	if !ok {
		return 0
	}
	return int32(len(t.Partitions))
}

func (o *internalTopicLog) partition(p int32) (*replication.Partition, error) {
	part := o.srv.replicas.Partition(o.topic, p)
	if part == nil || !part.IsLeader() {
		return nil, fmt.Errorf("%s-%d is not led here: %w", o.topic, p, kerr.NotLeaderForPartition)
	}
	return part, nil
}

// Append writes a coordinator's batch and returns once the in-sync replicas
// have it (Kafka's coordinators append with acks=all), so that a commit the
// coordinator acknowledges survives a failover.
func (o *internalTopicLog) Append(p int32, batch []byte) error {
	part, err := o.partition(p)
	if err != nil {
		return err
	}
	if part.NotEnoughReplicas() {
		return fmt.Errorf("%s-%d: %w", o.topic, p, kerr.NotEnoughReplicas)
	}
	info, err := o.srv.appendAsLeader(part, batch)
	if err != nil {
		return err
	}
	return part.WaitReplicated(info.LastOffset+1, internalAppendTimeout, o.srv.closing)
}

// internalAppendTimeout bounds a coordinator's wait for its followers
// (offsets.commit.timeout.ms and transaction.state.log's equivalent default).
const internalAppendTimeout = 5 * time.Second

// ReadFrom reads the partition's batches from its files, loadBuffer bytes at
// a time.
func (o *internalTopicLog) ReadFrom(p int32, offset int64, fn func(batch []byte) error) error {
	part, err := o.partition(p)
	if err != nil {
		return err
	}
	return readBatches(part.Log(), offset, o.loadBuffer, fn)
}

// readBatches calls fn with each whole batch of a log from offset (clamped
// to the log start) to its end, reading bufBytes at a time.
func readBatches(l *storage.Log, offset, bufBytes int64, fn func(batch []byte) error) error {
	offset = max(offset, l.LogStartOffset())
	var buf []byte
	for {
		end := l.LogEndOffset()
		if offset >= end {
			return nil
		}
		res, err := l.Read(offset, bufBytes, end, true)
		if err != nil {
			return err
		}
		if res.Size == 0 {
			return nil
		}
		// Copied first, so that the segment files may close (Release)
		// whatever fn does.
		if int64(cap(buf)) < res.Size {
			buf = make([]byte, res.Size)
		}
		all := buf[:res.Size]
		pos := int64(0)
		for _, sl := range res.Slices {
			if _, err := sl.File.ReadAt(all[pos:pos+sl.Len], sl.Pos); err != nil {
				res.Release()
				return fmt.Errorf("reading %s at position %d: %w", l.Dir(), sl.Pos, err)
			}
			pos += sl.Len
		}
		res.Release()
		{
			b := all
			for len(b) >= recordbatch.LogOverhead {
				batch, rest, ok := recordbatch.Split(b)
				if !ok || len(batch) < recordbatch.HeaderSize {
					return fmt.Errorf("%s: malformed batch at offset %d", l.Dir(), offset)
				}
				last := recordbatch.Batch(batch).LastOffset()
				if last >= offset {
					if err := fn(batch); err != nil {
						return err
					}
				}
				offset = max(offset, last+1)
				b = rest
			}
		}
		offset = max(offset, res.EndOffset)
	}
}
