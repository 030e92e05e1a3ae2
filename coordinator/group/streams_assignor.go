package group

import (
	"slices"
	"strings"
)

// The streams groups' task assignor, after Kafka's StickyTaskAssignor:
//
//   - active tasks stay with the member that had them (in the previous
//     target, else in its current assignment) while that member is within
//     its share (tasks / members, and one more for as many members as
//     the division leaves over);
//   - the other active tasks go to the least-loaded member, preferring a
//     member of a process that had the task before (its state is local
//     there), then the process with the least load per member, then the
//     member id, so the result depends only on the input;
//   - each task of a stateful subtopology (one with changelog topics: a
//     standby keeps a copy of its stores) gets up to numStandby standby
//     replicas on members of processes other than its active one's and of
//     each other, sticky to their previous holders, else on the
//     least-loaded such member; a replica that has no such process left is
//     not placed (as Kafka, which logs it).
//
// Warm-up tasks are not assigned: every task moves at once.

// streamsAssignMember is one member as the assignor sees it.
type streamsAssignMember struct {
	id      string
	process string
	prev    tasksTuple // previous target, else current assignment
}

// streamsAssignSpec is the assignor's input.
type streamsAssignSpec struct {
	members    []streamsAssignMember // any order
	tasks      map[string]int32      // subtopology -> number of tasks (partitions)
	stateful   map[string]bool       // subtopologies with state stores, the only ones with standbys
	numStandby int
}

// assignStreamsTasks computes the target assignment of every member.
func assignStreamsTasks(spec streamsAssignSpec) map[string]tasksTuple {
	out := make(map[string]tasksTuple, len(spec.members))
	if len(spec.members) == 0 {
		return out
	}
	members := slices.Clone(spec.members)
	slices.SortFunc(members, func(a, b streamsAssignMember) int { return strings.Compare(a.id, b.id) })
	byID := map[string]int{}
	procMembers := map[string]int{}
	for i, m := range members {
		out[m.id] = emptyTasks()
		byID[m.id] = i
		procMembers[m.process]++
	}
	all := allTasks(spec.tasks)
	load := make([]int, len(members)) // tasks (active and standby) per member
	procLoad := map[string]int{}

	// Active tasks: sticky pass within each member's share, then the rest.
	floor, extras := len(all)/len(members), len(all)%len(members)
	activeOf := map[taskID]int{} // task -> member index
	prevProcs := map[taskID]map[string]bool{}
	for _, m := range members {
		for t := range m.prev.active {
			addProc(prevProcs, t, m.process)
		}
		for t := range m.prev.standby {
			addProc(prevProcs, t, m.process)
		}
	}
	for _, t := range all {
		for i, m := range members {
			if m.prev.active.has(t) && (load[i] < floor || load[i] == floor && extras > 0) {
				if load[i] == floor {
					extras--
				}
				activeOf[t] = i
				out[m.id].active.add(t)
				load[i]++
				procLoad[m.process]++
				break
			}
		}
	}
	for _, t := range all {
		if _, ok := activeOf[t]; ok {
			continue
		}
		best := -1
		for i, m := range members {
			if best < 0 || better(i, best, members, load, procLoad, procMembers, prevProcs[t][m.process], prevProcs[t][members[best].process]) {
				best = i
			}
		}
		activeOf[t] = best
		out[members[best].id].active.add(t)
		load[best]++
		procLoad[members[best].process]++
	}

	// Standby replicas, each on a process without a copy of the task.
	if spec.numStandby <= 0 {
		return out
	}
	for _, t := range all {
		if !spec.stateful[t.sub] {
			continue
		}
		used := map[string]bool{members[activeOf[t]].process: true}
		for r := 0; r < spec.numStandby; r++ {
			best := -1
			for i, m := range members {
				if used[m.process] {
					continue
				}
				if m.prev.standby.has(t) && (best < 0 || !members[best].prev.standby.has(t)) {
					best = i
					continue
				}
				if best >= 0 && members[best].prev.standby.has(t) {
					continue
				}
				if best < 0 || better(i, best, members, load, procLoad, procMembers, false, false) {
					best = i
				}
			}
			if best < 0 {
				break // fewer processes than replicas
			}
			used[members[best].process] = true
			out[members[best].id].standby.add(t)
			load[best]++
			procLoad[members[best].process]++
		}
	}
	return out
}

// better reports whether member i is a better home for a task than member
// j: less loaded, then had the task before, then a less loaded process (per
// member), then the lower id (members are sorted, so the lower index).
func better(i, j int, members []streamsAssignMember, load []int, procLoad, procMembers map[string]int, iHad, jHad bool) bool {
	if load[i] != load[j] {
		return load[i] < load[j]
	}
	if iHad != jHad {
		return iHad
	}
	pi, pj := members[i].process, members[j].process
	// procLoad[pi]/procMembers[pi] < procLoad[pj]/procMembers[pj], without division.
	li, lj := procLoad[pi]*procMembers[pj], procLoad[pj]*procMembers[pi]
	if li != lj {
		return li < lj
	}
	return i < j
}

func addProc(m map[taskID]map[string]bool, t taskID, p string) {
	s := m[t]
	if s == nil {
		s = map[string]bool{}
		m[t] = s
	}
	s[p] = true
}

// allTasks lists every task of the subtopologies, sorted.
func allTasks(tasks map[string]int32) []taskID {
	var out []taskID
	for sub, n := range tasks {
		for p := int32(0); p < n; p++ {
			out = append(out, taskID{sub, p})
		}
	}
	slices.SortFunc(out, compareTasks)
	return out
}
