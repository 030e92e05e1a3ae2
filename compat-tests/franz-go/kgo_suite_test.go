// Package franzgo runs franz-go's own kgo integration suite (the module
// cache's copy, at the version in go.mod) against brokers started in this
// test process through package straittest: one broker, and three whose
// embedded etcd members form one cluster with KGO_TEST_RF=3. The suite runs
// at its default record count unless KGO_TEST_RECORDS is set.
//
// It runs only when STRAIT_KGO_SUITE=1 (the compat stage): `go test ./...`
// skips it. The suite takes minutes; give `go test` a -timeout above twice
// KGO_TIMEOUT (default 30m per cluster size). KGO_BROKERS=1 or 3 runs one
// size only; KGO_RUN passes -run to the suite. Tests listed in skip.txt are
// not run; a failure not listed in expected-failures.txt fails this test,
// and so does a listed test that passes. A failed test listed in flaky.txt
// (its own logic races on a cluster) is run again by itself, twice at most,
// and logged. Each run's `go test -json` output is kept in work/kgo-<n>.json.
package franzgo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strait/strait/straittest"
)

func TestKgoSuite(t *testing.T) {
	if os.Getenv("STRAIT_KGO_SUITE") != "1" {
		t.Skip("franz-go's kgo suite against in-process brokers: runs with STRAIT_KGO_SUITE=1")
	}
	sizes := []int{1, 3}
	if s := os.Getenv("KGO_BROKERS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || (n != 1 && n != 3) {
			t.Fatalf("KGO_BROKERS=%q: want 1 or 3", s)
		}
		sizes = []int{n}
	}
	skip := listFile(t, "skip.txt")
	expected := listFile(t, "expected-failures.txt")
	flaky := listFile(t, "flaky.txt")
	for _, n := range sizes {
		t.Run(fmt.Sprintf("brokers=%d", n), func(t *testing.T) {
			runKgoSuite(t, n, skip, expected, flaky)
		})
	}
}

func runKgoSuite(t *testing.T, n int, skip, expected, flaky []string) {
	c := straittest.StartCluster(t, n, straittest.WithEmbeddedEtcd(), straittest.WithLogLevel(slog.LevelWarn))
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	timeout := os.Getenv("KGO_TIMEOUT")
	if timeout == "" {
		timeout = "30m"
	}
	args := []string{"test", "-json", "-count=1", "-timeout", timeout}
	if r := os.Getenv("KGO_RUN"); r != "" {
		args = append(args, "-run", r)
	}
	if len(skip) > 0 {
		args = append(args, "-skip", "^("+strings.Join(skip, "|")+")$")
	}
	args = append(args, "github.com/twmb/franz-go/pkg/kgo")
	suite := func(args []string) ([]byte, string, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir = root // the module's go.mod pins the franz-go version
		cmd.Env = append(os.Environ(),
			"KGO_SEEDS="+c.Seeds(),
			"KGO_TEST_RF="+strconv.Itoa(n),
			"KGO_LOG_LEVEL=none",
		)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return out, stderr.String(), err
	}
	began := time.Now()
	out, stderr, runErr := suite(args)
	took := time.Since(began)

	if err := os.MkdirAll("work", 0o755); err == nil {
		os.WriteFile(filepath.Join("work", fmt.Sprintf("kgo-%d.json", n)), out, 0o644)
	}
	status, packageFailed := summarize(out)
	// The package fails when a test fails; only a failure with no failed
	// test means the binary itself failed.
	packageFailed = packageFailed && !slices.Contains(slices.Collect(maps.Values(status)), "fail")
	for _, name := range flaky {
		for attempt := 1; attempt <= 2 && status[name] == "fail"; attempt++ {
			rerun, _, _ := suite([]string{"test", "-json", "-count=1", "-timeout", "5m", "-run", "^" + name + "$", "github.com/twmb/franz-go/pkg/kgo"})
			rs, _ := summarize(rerun)
			t.Logf("%s failed; run again by itself (flaky.txt), attempt %d: %s", name, attempt, rs[name])
			if rs[name] == "pass" {
				status[name] = "pass"
			}
		}
	}
	var passed, failed, skipped []string
	for name, s := range status {
		switch s {
		case "pass":
			passed = append(passed, name)
		case "fail":
			failed = append(failed, name)
		case "skip":
			skipped = append(skipped, name)
		}
	}
	slices.Sort(failed)
	records := os.Getenv("KGO_TEST_RECORDS")
	if records == "" {
		records = "the suite's default"
	}
	t.Logf("kgo suite on %d broker(s), KGO_TEST_RECORDS %s: %d passed, %d failed, %d skipped in %v",
		n, records, len(passed), len(failed), len(skipped), took.Round(time.Second))

	for _, name := range failed {
		if !slices.Contains(expected, name) {
			t.Errorf("%s failed (not in expected-failures.txt)", name)
		}
	}
	for _, name := range expected {
		if status[name] == "pass" {
			t.Errorf("%s passes: remove it from expected-failures.txt", name)
		}
	}
	if len(passed) == 0 {
		t.Errorf("no kgo test passed")
	}
	if runErr != nil && (packageFailed && len(failed) == 0) {
		t.Errorf("go test of the kgo suite: %v\n%s", runErr, tail(stderr, 4000))
	}
}

// summarize reads `go test -json` output: each top-level test's last
// action (a test that started and never ended, cut off by a timeout or a
// crash, counts as failed) and whether the package failed.
func summarize(out []byte) (map[string]string, bool) {
	status := map[string]string{}
	packageFailed := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct{ Test, Action string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Test == "" {
			packageFailed = packageFailed || ev.Action == "fail"
			continue
		}
		if strings.Contains(ev.Test, "/") {
			continue
		}
		switch ev.Action {
		case "run":
			if _, ok := status[ev.Test]; !ok {
				status[ev.Test] = "run"
			}
		case "pass", "fail", "skip":
			status[ev.Test] = ev.Action
		}
	}
	for name, s := range status {
		if s == "run" {
			status[name] = "fail"
		}
	}
	return status, packageFailed
}

// listFile reads the test names of a list file (one per line, # starts a
// comment).
func listFile(t *testing.T, name string) []string {
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		line, _, _ = strings.Cut(line, "#")
		for f := range strings.FieldsSeq(line) {
			out = append(out, f)
		}
	}
	return out
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
