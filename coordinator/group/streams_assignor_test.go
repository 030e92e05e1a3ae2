package group

import (
	"fmt"
	"testing"
)

func streamsTasks(t *testing.T, out map[string]tasksTuple, total int) map[taskID]string {
	t.Helper()
	owner := map[taskID]string{}
	for id, tt := range out {
		for task := range tt.active {
			if o, ok := owner[task]; ok {
				t.Fatalf("task %v active on %s and %s", task, o, id)
			}
			owner[task] = id
		}
	}
	if len(owner) != total {
		t.Fatalf("%d of %d tasks assigned: %v", len(owner), total, owner)
	}
	return owner
}

func TestStreamsAssignorBalancesAndCoversEveryTask(t *testing.T) {
	spec := streamsAssignSpec{tasks: map[string]int32{"0": 4, "1": 4}}
	for i := range 3 {
		spec.members = append(spec.members, streamsAssignMember{id: fmt.Sprintf("m%d", i), process: fmt.Sprintf("p%d", i), prev: emptyTasks()})
	}
	out := assignStreamsTasks(spec)
	streamsTasks(t, out, 8)
	counts := map[int]int{}
	for _, tt := range out {
		counts[len(tt.active)]++
		if len(tt.standby) != 0 {
			t.Fatalf("standby tasks without standby replicas: %v", tt.standby)
		}
	}
	if counts[3] != 2 || counts[2] != 1 {
		t.Fatalf("active tasks per member not 3,3,2: %v", out)
	}
}

func TestStreamsAssignorIsSticky(t *testing.T) {
	tasks := map[string]int32{"0": 4, "1": 4}
	spec := streamsAssignSpec{tasks: tasks, members: []streamsAssignMember{
		{id: "a", process: "p1", prev: emptyTasks()}, {id: "b", process: "p2", prev: emptyTasks()},
	}}
	first := assignStreamsTasks(spec)
	before := streamsTasks(t, first, 8)

	// A third member joins: only what it needs moves to it (8/3: 3, 3, 2).
	spec.members = []streamsAssignMember{
		{id: "a", process: "p1", prev: first["a"]}, {id: "b", process: "p2", prev: first["b"]},
		{id: "c", process: "p3", prev: emptyTasks()},
	}
	second := assignStreamsTasks(spec)
	after := streamsTasks(t, second, 8)
	moved := 0
	for task, o := range after {
		if before[task] != o {
			moved++
			if o != "c" {
				t.Fatalf("task %v moved from %s to %s, not to the new member", task, before[task], o)
			}
		}
	}
	if moved != 2 || len(second["c"].active) != 2 {
		t.Fatalf("%d tasks moved, new member has %v", moved, second["c"].active)
	}

	// The same input gives the same output.
	again := assignStreamsTasks(spec)
	for id := range second {
		if !again[id].equal(second[id]) {
			t.Fatalf("assignment not deterministic for %s: %v vs %v", id, again[id], second[id])
		}
	}
}

func TestStreamsAssignorStandbyOnOtherProcesses(t *testing.T) {
	tasks := map[string]int32{"0": 3}
	// Two processes with two members each, two standby replicas asked: only
	// one fits (one per process other than the active one's).
	spec := streamsAssignSpec{tasks: tasks, stateful: map[string]bool{"0": true}, numStandby: 2, members: []streamsAssignMember{
		{id: "a1", process: "A", prev: emptyTasks()}, {id: "a2", process: "A", prev: emptyTasks()},
		{id: "b1", process: "B", prev: emptyTasks()}, {id: "b2", process: "B", prev: emptyTasks()},
	}}
	out := assignStreamsTasks(spec)
	owner := streamsTasks(t, out, 3)
	process := map[string]string{"a1": "A", "a2": "A", "b1": "B", "b2": "B"}
	for task, activeOn := range owner {
		var standbys []string
		for id, tt := range out {
			if tt.standby.has(task) {
				standbys = append(standbys, id)
			}
		}
		if len(standbys) != 1 {
			t.Fatalf("task %v has standbys %v, want one", task, standbys)
		}
		if process[standbys[0]] == process[activeOn] {
			t.Fatalf("task %v standby on %s in the active's process (%s)", task, standbys[0], activeOn)
		}
	}

	// A stateless subtopology has no standbys.
	spec.tasks["1"] = 2
	for id, tt := range assignStreamsTasks(spec) {
		for task := range tt.standby {
			if task.sub == "1" {
				t.Fatalf("%s got a standby %v of a stateless subtopology", id, task)
			}
		}
	}
	delete(spec.tasks, "1")

	// One process: no standby can be placed.
	spec.members = spec.members[:2]
	for id, tt := range assignStreamsTasks(spec) {
		if len(tt.standby) != 0 {
			t.Fatalf("%s got standbys %v with a single process", id, tt.standby)
		}
	}
}
