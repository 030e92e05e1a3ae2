package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func writeScenario(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadScenariosObjectListAndMatrix(t *testing.T) {
	dir := t.TempDir()
	writeScenario(t, dir, "a.json", `{"record_size": 100, "acks": "1", "duration": "4s"}`)
	writeScenario(t, dir, "b.json", `[{"name": "named", "compression": "zstd"}, {"partitions": 100, "duration": 1.5}]`)
	writeScenario(t, dir, "c.json", `{"defaults": {"producers": 4}, "matrix": {"acks": ["1", "all"], "compression": ["none", "lz4", "zstd"]}}`)
	got, err := loadScenarios([]string{dir}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1+2+6 {
		t.Fatalf("got %d scenarios, want 9", len(got))
	}
	if a := got[0]; a.RecordSize != 100 || a.Acks != "1" || a.Partitions != 6 || a.Duration.D() != 4*time.Second || a.Name != "100B p6 acks=1 none 1prod" {
		t.Errorf("a.json: %+v", a)
	}
	if got[1].Name != "named" || got[1].Compression != "zstd" || got[1].RecordSize != 1024 {
		t.Errorf("b.json[0]: %+v", got[1])
	}
	if got[2].Duration.D() != 1500*time.Millisecond || got[2].Partitions != 100 {
		t.Errorf("b.json[1]: %+v", got[2])
	}
	var names []string
	for _, s := range got[3:] {
		if s.Producers != 4 {
			t.Errorf("matrix defaults lost: %+v", s)
		}
		names = append(names, s.Name)
	}
	want := []string{
		"1KB p6 acks=1 none 4prod", "1KB p6 acks=1 lz4 4prod", "1KB p6 acks=1 zstd 4prod",
		"1KB p6 acks=all none 4prod", "1KB p6 acks=all lz4 4prod", "1KB p6 acks=all zstd 4prod",
	}
	if !slices.Equal(names, want) {
		t.Errorf("matrix names %q, want %q", names, want)
	}
}

func TestLoadScenariosRejectsUnknownFieldsAndBadValues(t *testing.T) {
	for name, body := range map[string]string{
		"typo.json":  `{"record_sise": 100}`,
		"acks.json":  `{"acks": "2"}`,
		"codec.json": `{"compression": "brotli"}`,
		"small.json": `{"record_size": 8}`,
	} {
		dir := t.TempDir()
		writeScenario(t, dir, name, body)
		if _, err := loadScenarios([]string{dir}, 1); err == nil {
			t.Errorf("%s: loaded %s without an error", name, body)
		}
	}
}

func TestBenchScenarioFilesLoad(t *testing.T) {
	for _, p := range []string{"../../bench/scenarios", "../../bench/matrix/full.json"} {
		if _, err := loadScenarios([]string{p}, 0.5); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestMedianRotatePct(t *testing.T) {
	if m := median([]float64{3, math.NaN(), 1, 2}); m != 2 {
		t.Errorf("median = %v, want 2", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median = %v, want 2.5", m)
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing is not NaN")
	}
	if r := rotate([]string{"a", "b", "c"}, 4); !slices.Equal(r, []string{"b", "c", "a"}) {
		t.Errorf("rotate = %v", r)
	}
	ns := []int64{1e6, 2e6, 3e6, 4e6, 5e6, 6e6, 7e6, 8e6, 9e6, 10e6}
	if p := pct(ns, 0.5); p != 5 {
		t.Errorf("p50 = %v ms, want 5", p)
	}
	if p := pct(ns, 0.99); p != 10 {
		t.Errorf("p99 = %v ms, want 10", p)
	}
}

func TestValuePoolSlicesStayInBounds(t *testing.T) {
	pool := newValuePool()
	for i := uint64(0); i < 100000; i += 977 {
		if v := pool.value(i, 1024); len(v) != 1024 || cap(v) != 1024 {
			t.Fatalf("value(%d) has len %d cap %d", i, len(v), cap(v))
		}
	}
}
