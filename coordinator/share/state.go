package share

// The share coordinator's persisted state (Kafka's ShareCoordinatorShard):
// per share-partition (group, topic id, partition) the state epoch, the
// leader epoch of the share-partition leader that last wrote it, the start
// offset (SPSO) and the state batches of the in-flight window, kept in
// __share_group_state as Kafka 4.4's records: ShareSnapshotKey/Value
// (record type 0, the whole state) and ShareUpdateKey/Value (type 1, the
// batches of one write, merged over the snapshot on replay). A snapshot is
// written instead of an update every SnapshotEvery updates. This file
// encodes and replays the records and applies the ShareGroupState RPCs'
// semantics; the broker appends the records and reads them back.

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Persisted delivery states (ShareSnapshotValue's DeliveryState): an
// acquired record is persisted Available with its delivery count, as its
// lock does not survive a leader move.
const (
	DeliveryAvailable    int8 = 0
	DeliveryAcknowledged int8 = 2
	DeliveryArchived     int8 = 4
)

// StateKey names one share-partition's state.
type StateKey struct {
	Group     string
	Topic     [16]byte
	Partition int32
}

// CoordinatorKey is Kafka's SharePartitionKey.asCoordinatorKey
// (group:topicId:partition, the topic id in Kafka's Uuid.toString, URL-safe
// base64 without padding), whose hash picks the __share_group_state
// partition.
func (k StateKey) CoordinatorKey() string {
	return k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.Topic[:]) + ":" + strconv.Itoa(int(k.Partition))
}

// StateBatch is a run of offsets with one delivery state and count.
type StateBatch struct {
	First, Last int64
	State       int8
	Count       int16
}

// SPState is one share-partition's persisted state.
type SPState struct {
	StateEpoch    int32
	LeaderEpoch   int32
	StartOffset   int64
	Batches       []StateBatch
	SnapshotEpoch int32
	updates       int // update records since the last snapshot
	created       int64
}

// Clone returns a copy the caller may keep.
func (s *SPState) Clone() SPState {
	c := *s
	c.Batches = slices.Clone(s.Batches)
	return c
}

// mergeBatches lays next over prev (next wins where they overlap) and drops
// what lies below start, as Kafka's combineStateBatches.
func mergeBatches(prev, next []StateBatch, start int64) []StateBatch {
	var out []StateBatch
	for _, b := range prev {
		// Cut b by every range of next.
		pieces := []StateBatch{b}
		for _, n := range next {
			var keep []StateBatch
			for _, p := range pieces {
				if n.Last < p.First || n.First > p.Last {
					keep = append(keep, p)
					continue
				}
				if p.First < n.First {
					keep = append(keep, StateBatch{p.First, n.First - 1, p.State, p.Count})
				}
				if p.Last > n.Last {
					keep = append(keep, StateBatch{n.Last + 1, p.Last, p.State, p.Count})
				}
			}
			pieces = keep
		}
		out = append(out, pieces...)
	}
	out = append(out, next...)
	slices.SortFunc(out, func(a, b StateBatch) int {
		switch {
		case a.First < b.First:
			return -1
		case a.First > b.First:
			return 1
		}
		return 0
	})
	res := out[:0]
	for _, b := range out {
		if b.Last < start {
			continue
		}
		b.First = max(b.First, start)
		if k := len(res) - 1; k >= 0 && res[k].Last+1 == b.First && res[k].State == b.State && res[k].Count == b.Count {
			res[k].Last = b.Last
			continue
		}
		res = append(res, b)
	}
	return res
}

// Record types of __share_group_state (the keys' version field).
const (
	recSnapshot int16 = 0
	recUpdate   int16 = 1
)

// StateRecord is a key and value for __share_group_state (a nil value is
// a tombstone).
type StateRecord struct{ Key, Value []byte }

func encodeKey(typ int16, k StateKey) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(typ))
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.Topic[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

func decodeKey(b []byte) (int16, StateKey, error) {
	var k StateKey
	if len(b) < 4 {
		return 0, k, errShortRecord
	}
	typ := int16(binary.BigEndian.Uint16(b))
	n := int(binary.BigEndian.Uint16(b[2:]))
	b = b[4:]
	if len(b) != n+20 {
		return 0, k, errShortRecord
	}
	k.Group = string(b[:n])
	copy(k.Topic[:], b[n:n+16])
	k.Partition = int32(binary.BigEndian.Uint32(b[n+16:]))
	return typ, k, nil
}

var errShortRecord = errors.New("malformed __share_group_state record")

func appendBatches(b []byte, bs []StateBatch) []byte {
	b = binary.AppendUvarint(b, uint64(len(bs)+1)) // compact array
	for _, s := range bs {
		b = binary.BigEndian.AppendUint64(b, uint64(s.First))
		b = binary.BigEndian.AppendUint64(b, uint64(s.Last))
		b = append(b, byte(s.State))
		b = binary.BigEndian.AppendUint16(b, uint16(s.Count))
		b = append(b, 0) // no tagged fields
	}
	return b
}

// encodeSnapshot is ShareSnapshotValue v0 (flexible).
func encodeSnapshot(s *SPState, now int64) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(s.SnapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.StateEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(s.StartOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(s.created))
	b = binary.BigEndian.AppendUint64(b, uint64(now))
	b = appendBatches(b, s.Batches)
	return append(b, 0)
}

// encodeUpdate is ShareUpdateValue v0 (flexible).
func encodeUpdate(snapshotEpoch, leaderEpoch int32, start int64, bs []StateBatch) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(snapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(leaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(start))
	b = appendBatches(b, bs)
	return append(b, 0)
}

type reader struct {
	b   []byte
	bad bool
}

func (r *reader) n(k int) []byte {
	if r.bad || len(r.b) < k {
		r.bad = true
		return make([]byte, k)
	}
	v := r.b[:k]
	r.b = r.b[k:]
	return v
}
func (r *reader) i16() int16 { return int16(binary.BigEndian.Uint16(r.n(2))) }
func (r *reader) i32() int32 { return int32(binary.BigEndian.Uint32(r.n(4))) }
func (r *reader) i64() int64 { return int64(binary.BigEndian.Uint64(r.n(8))) }
func (r *reader) uvarint() uint64 {
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[k:]
	return v
}

// skipTags skips a tagged-field section.
func (r *reader) skipTags() {
	for n := r.uvarint(); n > 0 && !r.bad; n-- {
		r.uvarint()
		r.n(int(min(r.uvarint(), uint64(len(r.b)+1))))
	}
}

func (r *reader) batches() []StateBatch {
	n := r.uvarint()
	if n == 0 || n-1 > uint64(len(r.b)/19) { // 19 bytes at least per batch
		r.bad = r.bad || n > 0
		return nil
	}
	out := make([]StateBatch, 0, n-1)
	for range n - 1 {
		s := StateBatch{First: r.i64(), Last: r.i64(), State: int8(r.n(1)[0]), Count: r.i16()}
		r.skipTags()
		out = append(out, s)
	}
	return out
}

// Budget bounds what the shards of one broker hold, so that clients
// writing state for ever more share-partitions (or ever more batches)
// cannot grow its memory without bound: each stored state costs one entry
// plus one per state batch (strait.share.coordinator.max.state.entries).
// A write or initialization that would pass Max is refused with
// INVALID_REQUEST; states loaded from the log are always taken, so a
// smaller Max set at a restart holds what was written before. Shards
// check it under their own lock only: concurrent writes of different
// shards may pass it by one write's cost each.
type Budget struct {
	Max  int64
	used atomic.Int64
}

// Used is the entries held.
func (b *Budget) Used() int64 { return b.used.Load() }

func (b *Budget) add(n int64) {
	if b != nil {
		b.used.Add(n)
	}
}

func (b *Budget) allows(n int64) bool {
	return b == nil || n <= 0 || b.used.Load()+n <= b.Max
}

// cost is what a stored state costs a Budget.
func cost(st *SPState) int64 {
	if st == nil {
		return 0
	}
	return 1 + int64(len(st.Batches))
}

// errBudget is the answer to a write past the Budget.
const errBudget = "The share coordinator holds the most share-partition state it may (strait.share.coordinator.max.state.entries)."

// StateShard is the state of the share-partitions whose keys hash to one
// __share_group_state partition, as its leader holds it.
type StateShard struct {
	mu sync.Mutex
	// Epoch is the leader epoch of the __share_group_state partition the
	// shard was loaded at (-1: not loaded).
	epoch  int32
	states map[StateKey]*SPState
	budget *Budget // nil: unbounded
}

// NewStateShard returns an unloaded shard drawing on budget (nil: none).
func NewStateShard(budget *Budget) *StateShard {
	return &StateShard{epoch: -1, states: map[StateKey]*SPState{}, budget: budget}
}

// set stores st under k (nil deletes), keeping the budget (lock held).
func (s *StateShard) set(k StateKey, st *SPState) {
	s.budget.add(cost(st) - cost(s.states[k]))
	if st == nil {
		delete(s.states, k)
		return
	}
	s.states[k] = st
}

// Lock serializes the shard's loads and writes (an append included).
func (s *StateShard) Lock()   { s.mu.Lock() }
func (s *StateShard) Unlock() { s.mu.Unlock() }

// Loaded reports the leader epoch the shard was loaded at (lock held).
func (s *StateShard) Loaded() int32 { return s.epoch }

// Reset empties the shard before a load (lock held).
func (s *StateShard) Reset() {
	for _, st := range s.states {
		s.budget.add(-cost(st))
	}
	s.epoch, s.states = -1, map[StateKey]*SPState{}
}

// SetLoaded marks the shard loaded at epoch (lock held).
func (s *StateShard) SetLoaded(epoch int32) { s.epoch = epoch }

// Len is how many share-partitions have state here.
func (s *StateShard) Len() int { return len(s.states) }

// Replay applies one record read back from the log (lock held).
func (s *StateShard) Replay(key, value []byte) error {
	typ, k, err := decodeKey(key)
	if err != nil {
		return err
	}
	if value == nil { // tombstone
		s.set(k, nil)
		return nil
	}
	r := &reader{b: value}
	r.i16() // value version
	switch typ {
	case recSnapshot:
		st := &SPState{SnapshotEpoch: r.i32(), StateEpoch: r.i32(), LeaderEpoch: r.i32(), StartOffset: r.i64()}
		st.created = r.i64()
		r.i64() // write timestamp
		st.Batches = r.batches()
		r.skipTags()
		if r.bad {
			return errShortRecord
		}
		s.set(k, st)
	case recUpdate:
		snapEpoch, leaderEpoch, start := r.i32(), r.i32(), r.i64()
		bs := r.batches()
		r.skipTags()
		if r.bad {
			return errShortRecord
		}
		st := s.states[k]
		if st == nil || st.SnapshotEpoch != snapEpoch {
			return nil // an update of a snapshot compacted away or replaced
		}
		before := cost(st)
		s.applyUpdate(st, leaderEpoch, start, mergeBatches(st.Batches, bs, startOr(start, st.StartOffset)))
		s.budget.add(cost(st) - before)
	default:
		return errShortRecord
	}
	return nil
}

// applyUpdate installs an update whose merged batches are merged.
func (s *StateShard) applyUpdate(st *SPState, leaderEpoch int32, start int64, merged []StateBatch) {
	if leaderEpoch >= 0 {
		st.LeaderEpoch = leaderEpoch
	}
	if start >= 0 {
		st.StartOffset = start
	}
	st.Batches = merged
	st.updates++
}

// startOr is an update's start offset, or cur when it carries none (-1).
func startOr(start, cur int64) int64 {
	if start >= 0 {
		return start
	}
	return cur
}

// Keys lists the share-partitions with state here that match (lock held).
func (s *StateShard) Keys(match func(StateKey) bool) []StateKey {
	var out []StateKey
	for k := range s.states {
		if match(k) {
			out = append(out, k)
		}
	}
	return out
}

// Get returns a share-partition's state (lock held).
func (s *StateShard) Get(k StateKey) (*SPState, bool) {
	st, ok := s.states[k]
	return st, ok
}

// Write is WriteShareGroupState for one share-partition, as Kafka's
// ShareCoordinatorShard.writeState: a write with an older state epoch is
// FENCED_STATE_EPOCH, one with an older leader epoch FENCED_LEADER_EPOCH;
// the first write of a key, a new state epoch or every snapshotEvery-th
// update writes a snapshot, any other an update. It returns the record to
// append and the function installing the new state once appended (lock
// held throughout).
func (s *StateShard) Write(k StateKey, stateEpoch, leaderEpoch int32, start int64, bs []StateBatch, snapshotEvery int, now int64) (StateRecord, func(), int16, string) {
	st := s.states[k]
	if st != nil {
		if stateEpoch < st.StateEpoch {
			return StateRecord{}, nil, kerr.FencedStateEpoch.Code, "Request state epoch " + strconv.Itoa(int(stateEpoch)) + " is less than the current state epoch " + strconv.Itoa(int(st.StateEpoch)) + "."
		}
		if leaderEpoch < st.LeaderEpoch {
			return StateRecord{}, nil, kerr.FencedLeaderEpoch.Code, "Request leader epoch " + strconv.Itoa(int(leaderEpoch)) + " is less than the current leader epoch " + strconv.Itoa(int(st.LeaderEpoch)) + "."
		}
	}
	if st == nil || stateEpoch > st.StateEpoch || st.updates+1 >= snapshotEvery {
		next := &SPState{StateEpoch: stateEpoch, LeaderEpoch: leaderEpoch, StartOffset: start, created: now}
		if st != nil {
			next.SnapshotEpoch, next.created = st.SnapshotEpoch+1, st.created
			if stateEpoch == st.StateEpoch {
				next.Batches = st.Batches
				if start < 0 {
					next.StartOffset = st.StartOffset
				}
			}
		}
		if next.StartOffset < 0 {
			next.StartOffset = 0
		}
		next.Batches = mergeBatches(next.Batches, bs, next.StartOffset)
		if !s.budget.allows(cost(next) - cost(st)) {
			return StateRecord{}, nil, kerr.InvalidRequest.Code, errBudget
		}
		rec := StateRecord{Key: encodeKey(recSnapshot, k), Value: encodeSnapshot(next, now)}
		return rec, func() { s.set(k, next) }, 0, ""
	}
	merged := mergeBatches(st.Batches, bs, startOr(start, st.StartOffset))
	if !s.budget.allows(int64(len(merged) - len(st.Batches))) {
		return StateRecord{}, nil, kerr.InvalidRequest.Code, errBudget
	}
	rec := StateRecord{Key: encodeKey(recUpdate, k), Value: encodeUpdate(st.SnapshotEpoch, leaderEpoch, start, bs)}
	return rec, func() {
		before := cost(st)
		s.applyUpdate(st, leaderEpoch, start, merged)
		s.budget.add(cost(st) - before)
	}, 0, ""
}

// Initialize is InitializeShareGroupState: a new state epoch and start
// offset with no batches, written as a snapshot (lock held).
func (s *StateShard) Initialize(k StateKey, stateEpoch int32, start int64, now int64) (StateRecord, func(), int16, string) {
	if st := s.states[k]; st != nil && stateEpoch < st.StateEpoch {
		return StateRecord{}, nil, kerr.FencedStateEpoch.Code, "Initialize state epoch " + strconv.Itoa(int(stateEpoch)) + " is less than the current state epoch " + strconv.Itoa(int(st.StateEpoch)) + "."
	}
	next := &SPState{StateEpoch: stateEpoch, LeaderEpoch: -1, StartOffset: start, created: now}
	if st := s.states[k]; st != nil {
		next.SnapshotEpoch, next.created = st.SnapshotEpoch+1, st.created
	}
	if !s.budget.allows(cost(next) - cost(s.states[k])) {
		return StateRecord{}, nil, kerr.InvalidRequest.Code, errBudget
	}
	rec := StateRecord{Key: encodeKey(recSnapshot, k), Value: encodeSnapshot(next, now)}
	return rec, func() { s.set(k, next) }, 0, ""
}

// Delete is DeleteShareGroupState: tombstones for the snapshot and the
// update keys (lock held). ok is false when there is nothing to delete.
func (s *StateShard) Delete(k StateKey) (recs []StateRecord, apply func(), ok bool) {
	if _, ok := s.states[k]; !ok {
		return nil, nil, false
	}
	recs = []StateRecord{{Key: encodeKey(recSnapshot, k)}, {Key: encodeKey(recUpdate, k)}}
	return recs, func() { s.set(k, nil) }, true
}

// DeliveryComplete is the number of offsets at or above start that are acknowledged or archived
// (DeliveryCompleteCount).
func DeliveryComplete(st *SPState) int32 {
	var n int64
	for _, b := range st.Batches {
		if b.State == DeliveryAcknowledged || b.State == DeliveryArchived {
			n += b.Last - max(b.First, st.StartOffset) + 1
		}
	}
	return int32(min(n, 1<<31-1))
}
