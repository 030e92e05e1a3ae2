//go:build linux

package brokerproc

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeBroker writes a script that stands in for bin/strait: it logs its
// arguments, writes the ready file (its second argument) and exits 0 on
// SIGTERM (or after a minute at most); as mode says, it exits before
// ready ("exit") or ignores SIGTERM ("deaf").
func fakeBroker(t *testing.T, mode string) string {
	t.Helper()
	body := `#!/bin/sh
echo "args: $*"
`
	switch mode {
	case "exit":
		body += "exit 3\n"
	case "deaf":
		body += "trap '' TERM\n"
	default:
		body += "trap 'echo stopping; exit 0' TERM\n"
	}
	body += `touch "$2"
i=0
while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
exit 4
`
	bin := filepath.Join(t.TempDir(), "strait")
	if err := os.WriteFile(bin, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestStartStop(t *testing.T) {
	dir := t.TempDir()
	f := &Flags{Port: 19999}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f.Register(fs)
	if err := fs.Parse([]string{"-strait", fakeBroker(t, ""), "-override", "a=1", "-override", "b=2"}); err != nil {
		t.Fatal(err)
	}
	if f.Topics != 100 || f.Partitions != 1000 || f.Addr() != "127.0.0.1:19999" {
		t.Errorf("defaults: %d topics, %d partitions, %s", f.Topics, f.Partitions, f.Addr())
	}
	b, took, err := Start(Launch{Flags: f, Dir: dir, Log: filepath.Join(dir, "broker.log"), Args: []string{"--ephemeral"},
		Env: []string{"TMPDIR=" + dir}, ReadyWithin: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if took <= 0 || b.Pid() <= 0 {
		t.Errorf("ready in %s, pid %d", took, b.Pid())
	}
	if _, err := b.Stop(time.Minute); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := b.Stop(time.Minute); err != nil {
		t.Errorf("a second stop: %v", err)
	}
	log, err := os.ReadFile(b.Log)
	if err != nil {
		t.Fatal(err)
	}
	want := "args: --ready-file " + filepath.Join(dir, "ready") +
		" --ephemeral --override listeners=PLAINTEXT://127.0.0.1:19999 --override a=1 --override b=2\nstopping\n"
	if string(log) != want {
		t.Errorf("broker log:\n%s\nwant:\n%s", log, want)
	}
}

func TestStartExitsEarly(t *testing.T) {
	dir := t.TempDir()
	f := &Flags{Bin: fakeBroker(t, "exit")}
	_, _, err := Start(Launch{Flags: f, Dir: dir, Log: filepath.Join(dir, "broker.log"), ReadyWithin: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "exited at start") {
		t.Fatalf("a broker exiting before ready: %v", err)
	}
}

func TestStopKillsAfterLimit(t *testing.T) {
	dir := t.TempDir()
	f := &Flags{Bin: fakeBroker(t, "deaf")}
	b, _, err := Start(Launch{Flags: f, Dir: dir, Log: filepath.Join(dir, "broker.log"), ReadyWithin: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stop(100 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "killed after") {
		t.Fatalf("a broker deaf to SIGTERM: %v", err)
	}
}

func TestWorkDir(t *testing.T) {
	given := filepath.Join(t.TempDir(), "a", "b")
	f := &Flags{Dir: given}
	if d, err := f.WorkDir("x-"); err != nil || d != given {
		t.Fatalf("WorkDir with -dir: %q, %v", d, err)
	}
	if fi, err := os.Stat(given); err != nil || !fi.IsDir() {
		t.Fatalf("-dir not made: %v", err)
	}
	t.Setenv("TMPDIR", t.TempDir())
	f.Dir = ""
	d, err := f.WorkDir("x-")
	if err != nil || !strings.HasPrefix(filepath.Base(d), "x-") {
		t.Fatalf("WorkDir without -dir: %q, %v", d, err)
	}
	if got := TopicName("idle", 7); got != "idle-007" {
		t.Errorf("TopicName: %q", got)
	}
}
