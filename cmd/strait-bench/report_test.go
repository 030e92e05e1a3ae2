package main

import (
	"strings"
	"testing"
)

// TestScalingStopTable: each broker's shutdown time is reported with its
// last step's total partitions, and a broker that had to be killed says so.
func TestScalingStopTable(t *testing.T) {
	rep := &CompareReport{
		Reference: kindKafka, Subject: kindStrait,
		Scaling: map[string][]ScaleStep{
			kindKafka:  {{Partitions: 1, TotalPartitions: 1}, {Partitions: 100, TotalPartitions: 101, StopSeconds: 120.5, StopKilled: true}},
			kindStrait: {{Partitions: 1, TotalPartitions: 1}, {Partitions: 100, TotalPartitions: 101, StopSeconds: 0.85}},
		},
	}
	var b strings.Builder
	writeScalingStop(&b, rep, []string{kindKafka, kindStrait})
	out := b.String()
	for _, want := range []string{
		"| Kafka | 101 | 120.50 (killed: no clean shutdown) |",
		"| Strait | 101 | 0.85 |",
		"killed after 120 s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stop table lacks %q:\n%s", want, out)
		}
	}

	// Without a measured stop (an older report, or -skip scaling) there is no table.
	delete(rep.Scaling, kindKafka)
	rep.Scaling[kindStrait][1].StopSeconds = 0
	b.Reset()
	writeScalingStop(&b, rep, []string{kindKafka, kindStrait})
	if b.Len() != 0 {
		t.Errorf("stop table without a measured stop:\n%s", b.String())
	}
}

// TestScalingPartitionerLine: the scaling table says which partitioner made
// its load and how many partitions each settled phase wrote; a report from
// before the choice was round-robin.
func TestScalingPartitionerLine(t *testing.T) {
	rep := &CompareReport{
		Reference: kindKafka, Subject: kindStrait, ScalePartitioner: scaleSticky,
		Scaling: map[string][]ScaleStep{
			kindStrait: {{Partitions: 10000, TotalPartitions: 10000, CreateSeconds: 6, PartitionsWritten: 9999}},
		},
	}
	var b strings.Builder
	writeScaling(&b, rep, newSummary(rep))
	out := b.String()
	for _, want := range []string{"Partitioner: **sticky**: 16 records", "| 9999 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("scaling table lacks %q:\n%s", want, out)
		}
	}
	rep.ScalePartitioner = ""
	b.Reset()
	writeScaling(&b, rep, newSummary(rep))
	if !strings.Contains(b.String(), "Partitioner: **round-robin**") {
		t.Errorf("a report without a partitioner is not round-robin:\n%s", b.String())
	}
}
