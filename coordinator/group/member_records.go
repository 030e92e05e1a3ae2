package group

import (
	"bytes"
	"slices"
)

// What consumer groups (consumer_persist.go) and streams groups
// (streams_persist.go) share in keeping their state in __consumer_offsets:
// both write, per member, a member metadata, a target assignment and a
// current assignment record, only when its value changed, and replay them
// the same way on load.

// memberLogs are a group's per-member records as the log holds them: the
// encoded values last appended or replayed, by member id.
type memberLogs struct {
	member  map[string][]byte
	target  map[string][]byte
	current map[string][]byte
}

func newMemberLogs() memberLogs {
	return memberLogs{member: map[string][]byte{}, target: map[string][]byte{}, current: map[string][]byte{}}
}

// ids returns, sorted, the member ids with a record for which keep is true
// (every id when keep is nil).
func (l *memberLogs) ids(keep func(id string) bool) []string {
	seen := map[string]bool{}
	var ids []string
	for _, m := range []map[string][]byte{l.member, l.target, l.current} {
		for id := range m {
			if !seen[id] && (keep == nil || keep(id)) {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// recordDiff collects the member records that bring a memberLogs to the
// group's state, and applies them to it once they are appended (commit), so
// a failed append leaves the logs as they were and the next change writes
// the difference again.
type recordDiff struct {
	key     func(version int16, member string) []byte
	recs    []record
	updates []func()
}

// set writes member id's record of version with value v unless the log
// already holds it; a nil v deletes a logged record (a tombstone).
func (d *recordDiff) set(version int16, logged map[string][]byte, id string, v []byte) {
	old, ok := logged[id]
	switch {
	case v == nil && !ok, v != nil && ok && bytes.Equal(old, v):
		return
	case v == nil:
		d.recs = append(d.recs, record{key: d.key(version, id)})
		d.updates = append(d.updates, func() { delete(logged, id) })
	default:
		d.recs = append(d.recs, record{key: d.key(version, id), value: v})
		d.updates = append(d.updates, func() { logged[id] = v })
	}
}

// tombstones deletes the member records of each id, current assignments
// first, as Kafka removes a member.
func (d *recordDiff) tombstones(l *memberLogs, ids []string, currentV, targetV, memberV int16) {
	for _, id := range ids {
		d.set(currentV, l.current, id, nil)
		d.set(targetV, l.target, id, nil)
		d.set(memberV, l.member, id, nil)
	}
}

func (d *recordDiff) commit() {
	for _, u := range d.updates {
		u()
	}
}

// memberTombstones is the records deleting every logged member's records
// of version, in id order.
func memberTombstones(ids []string, key func(version int16, member string) []byte, version int16) []record {
	recs := make([]record, 0, len(ids))
	for _, id := range ids {
		recs = append(recs, record{key: key(version, id)})
	}
	return recs
}

// replayMemberRecord applies one per-member record during load: the
// latest of a key wins, a tombstone deletes; raw keeps the encoded value.
func replayMemberRecord[T any](id string, value []byte, decoded map[string]T, raw map[string][]byte, decode func([]byte) (T, error)) error {
	if value == nil {
		delete(decoded, id)
		delete(raw, id)
		return nil
	}
	v, err := decode(value)
	if err != nil {
		return err
	}
	decoded[id] = v
	raw[id] = slices.Clone(value)
	return nil
}

// appendChangesLocked appends a group's state records before the change is
// answered, and commits them to its log view once appended.
func (g *group) appendChangesLocked(kind string, recs []record, commit func()) error {
	if len(recs) == 0 {
		commit()
		return nil
	}
	if err := g.appendRecords(recs); err != nil {
		g.c.logger.Warn("writing "+kind+" group state failed", "group", g.id, "records", len(recs), "err", err)
		return err
	}
	commit()
	return nil
}
