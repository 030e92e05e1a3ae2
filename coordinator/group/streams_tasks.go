package group

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// taskID is one task of a streams group: a subtopology and a partition of
// its source topics (Kafka's TaskId as the streams protocol names it).
type taskID struct {
	sub  string
	part int32
}

func compareTasks(a, b taskID) int {
	if c := cmp.Compare(a.sub, b.sub); c != 0 {
		return c
	}
	return cmp.Compare(a.part, b.part)
}

// taskSet is a set of tasks.
type taskSet map[taskID]struct{}

func (s taskSet) has(t taskID) bool { _, ok := s[t]; return ok }
func (s taskSet) add(t taskID)      { s[t] = struct{}{} }

func (s taskSet) equal(o taskSet) bool {
	if len(s) != len(o) {
		return false
	}
	for t := range s {
		if !o.has(t) {
			return false
		}
	}
	return true
}

func (s taskSet) clone() taskSet {
	out := make(taskSet, len(s))
	for t := range s {
		out[t] = struct{}{}
	}
	return out
}

func (s taskSet) sorted() []taskID {
	out := make([]taskID, 0, len(s))
	for t := range s {
		out = append(out, t)
	}
	slices.SortFunc(out, compareTasks)
	return out
}

// wire is the set as the protocol's TaskIDs: one entry per subtopology,
// sorted, never nil (an empty set is an empty, non-null array).
func (s taskSet) wire() []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, t := range s.sorted() {
		if n := len(out); n > 0 && out[n-1].SubtopologyID == t.sub {
			out[n-1].Partitions = append(out[n-1].Partitions, t.part)
			continue
		}
		e := kmsg.NewTaskIDs()
		e.SubtopologyID, e.Partitions = t.sub, []int32{t.part}
		out = append(out, e)
	}
	return out
}

// taskSetOf converts a request's task list; nil stays nil (not sent).
func taskSetOf(ids []kmsg.TaskIDs) taskSet {
	if ids == nil {
		return nil
	}
	s := taskSet{}
	for _, e := range ids {
		for _, p := range e.Partitions {
			s.add(taskID{e.SubtopologyID, p})
		}
	}
	return s
}

// tasksTuple is a member's active, standby and warm-up tasks (Kafka's
// TasksTuple).
type tasksTuple struct {
	active, standby, warmup taskSet
}

func emptyTasks() tasksTuple {
	return tasksTuple{active: taskSet{}, standby: taskSet{}, warmup: taskSet{}}
}

func (t tasksTuple) equal(o tasksTuple) bool {
	return t.active.equal(o.active) && t.standby.equal(o.standby) && t.warmup.equal(o.warmup)
}

func (t tasksTuple) clone() tasksTuple {
	return tasksTuple{active: t.active.clone(), standby: t.standby.clone(), warmup: t.warmup.clone()}
}

func (t tasksTuple) wire() kmsg.StreamsAssignment {
	a := kmsg.NewStreamsAssignment()
	a.ActiveTasks, a.StandbyTasks, a.WarmupTasks = t.active.wire(), t.standby.wire(), t.warmup.wire()
	return a
}
