package group

// GroupStat is one group as the metrics see it: its state, its type and its
// committed offsets (transactional offsets count once committed).
type GroupStat struct {
	ID        string
	State     string // as ListGroups answers it: Empty, Stable, ...
	Type      string // "classic", "consumer" or "streams"
	Members   int
	Committed []CommittedOffset
}

// CommittedOffset is a group's committed offset of one partition.
type CommittedOffset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Stats calls fn for every group of the __consumer_offsets partitions this
// coordinator has loaded. It takes each group's lock in turn, never two at a
// time, and copies what it reports: fn may be slow.
func (c *Coordinator) Stats(fn func(GroupStat)) {
	if c.closed.Load() {
		return
	}
	for _, g := range c.allGroups() {
		g.mu.Lock()
		if g.removed {
			g.mu.Unlock()
			continue
		}
		st := GroupStat{ID: g.id, State: g.stateLocked(), Type: g.kind.String(), Members: g.memberCountLocked()}
		for topic, parts := range g.offsets {
			for p, e := range parts {
				st.Committed = append(st.Committed, CommittedOffset{Topic: topic, Partition: p, Offset: e.offset})
			}
		}
		g.mu.Unlock()
		fn(st)
	}
}

// memberCountLocked is how many members the group has.
func (g *group) memberCountLocked() int {
	switch g.kind {
	case kindConsumer:
		return len(g.consumer.members)
	case kindStreams:
		return len(g.streams.members)
	}
	return len(g.classic.members)
}
