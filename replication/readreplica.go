package replication

// The preferred read replica (KIP-392): which replica a consumer should
// fetch from, as Kafka's ReplicaManager.findPreferredReadReplica with
// RackAwareReplicaSelector (replica.selector.class). The leader answers a
// consumer's Fetch that gives a rack with the id of an in-sync follower in
// that rack and no records; the consumer then fetches from that follower,
// which serves it up to its own high watermark (broker/fetch.go).

import (
	"slices"
	"time"
)

// readReplica is one candidate (Kafka's ReplicaView).
type readReplica struct {
	id            int32
	logEndOffset  int64
	sinceCaughtUp time.Duration
}

// moreCaughtUp is ReplicaView.comparator's order: the larger log end offset,
// then the more recently caught up, then the larger broker id.
func (a readReplica) moreCaughtUp(b readReplica) bool {
	if a.logEndOffset != b.logEndOffset {
		return a.logEndOffset > b.logEndOffset
	}
	if a.sinceCaughtUp != b.sinceCaughtUp {
		return a.sinceCaughtUp < b.sinceCaughtUp
	}
	return a.id > b.id
}

// PreferredReadReplica is the broker a consumer in clientRack fetching at
// fetchOffset should read p from, or -1 for this broker (the leader): -1
// unless this broker leads p, the client names a rack and the leader is not
// in it (RackAwareReplicaSelector). The candidates are the followers in the
// ISR whose log holds fetchOffset (log start <= fetchOffset <= log end, as
// their last fetch reported them), in the client's rack; of those the most
// caught up. rackOf gives a broker's rack and whether it has an endpoint on
// the client's listener (a broker without one is never chosen, Kafka's
// Node.noNode).
func (p *Partition) PreferredReadReplica(clientRack string, fetchOffset int64, rackOf func(id int32) (rack string, ok bool)) int32 {
	st := p.state.Load()
	self := p.m.cfg.NodeID
	if clientRack == "" || st == nil || st.Leader != self {
		return -1
	}
	if rack, ok := rackOf(self); ok && rack == clientRack {
		return -1 // the leader is in the client's rack
	}
	now := p.now()
	var cands []readReplica
	r := &p.repl
	r.mu.Lock()
	if r.role == roleLeader {
		for id, fs := range r.followers {
			if !slices.Contains(st.ISR, id) || fs.leo < fetchOffset || fs.logStart > fetchOffset {
				continue
			}
			cands = append(cands, readReplica{id: id, logEndOffset: fs.leo, sinceCaughtUp: now.Sub(fs.lastCaughtUp)})
		}
	}
	r.mu.Unlock()
	best := readReplica{id: -1}
	for _, c := range cands {
		if rack, ok := rackOf(c.id); !ok || rack != clientRack {
			continue
		}
		if best.id < 0 || c.moreCaughtUp(best) {
			best = c
		}
	}
	return best.id
}
