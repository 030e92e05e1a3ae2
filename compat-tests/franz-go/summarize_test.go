package franzgo

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/events.json is `go test -json` output of a package with a
// passing test (TestPass, and its subtest), a failing one (TestFail, failed
// by its subtest) and a skipped one (TestSkip).

// runSummarize runs summarize.py with args, returning its standard output
// and exit status; it fails the test when python3 is missing.
func runSummarize(t *testing.T, args ...string) (string, int) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("summarize.py needs python3: %v", err)
	}
	cmd := exec.Command(py, append([]string{"summarize.py"}, args...)...)
	cmd.Env = append(os.Environ(), "KGO_BROKERS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("summarize.py %v: %v", args, err)
	}
	if stderr.Len() > 0 {
		t.Logf("summarize.py %v stderr: %s", args, stderr.String())
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// run.sh reruns the flaky.txt tests that --failed lists and stops at a
// rerun --passed lists: top-level tests only, by their final action.
func TestSummarizeListsOutcomes(t *testing.T) {
	for _, c := range []struct{ flag, want string }{
		{"--failed", "TestFail\n"},
		{"--passed", "TestPass\n"},
	} {
		out, code := runSummarize(t, c.flag, "testdata/events.json")
		if out != c.want || code != 0 {
			t.Errorf("summarize.py %s: %q, exit %d; want %q, exit 0", c.flag, out, code, c.want)
		}
	}
	if out, code := runSummarize(t, "--failed"); code != 1 || out != "" {
		t.Errorf("summarize.py --failed without a file: %q, exit %d; want a usage error (exit 1)", out, code)
	}
}

// The RESULTS.md summary of the same events: the counts, the failed test
// against expected-failures.txt, and a flaky.txt test's rerun.
func TestSummarizeResults(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	none := write("none.txt", "# nothing listed\n")
	skip := write("skip.txt", "TestHangs # hangs\n")
	expected := write("expected.txt", "TestFail # known\n")
	flaky := write("flaky.txt", "TestFail # races\n")
	rerun := write("rerun.json", `{"Action":"run","Test":"TestFail"}
{"Action":"fail","Test":"TestFail"}
{"Action":"run","Test":"TestFail"}
{"Action":"pass","Test":"TestFail"}
`)
	results := filepath.Join(dir, "RESULTS.md")

	for _, c := range []struct {
		name     string
		args     []string
		exit     int
		contains []string
	}{{
		name: "unexpected failure",
		args: []string{"testdata/events.json", none, results, "v1.2.3", skip},
		exit: 1,
		contains: []string{
			"franz-go v1.2.3, KGO_TEST_RF=1, single broker.\n",
			"| passed | failed | skipped |\n|---|---|---|\n| 1 | 1 | 1 |\n",
			"## Failed\n\n- TestFail: **unexpected**\n",
			"## Rerun (compat-tests/franz-go/flaky.txt: the test's own logic races on a cluster)\n\nNone.\n",
			"also skip-tls.txt)\n\n- TestHangs: hangs\n",
			"## Skipped by the suite itself\n\n- TestSkip\n",
		},
	}, {
		name:     "expected failure",
		args:     []string{"testdata/events.json", expected, results, "v1.2.3", skip},
		exit:     0,
		contains: []string{"| 1 | 1 | 1 |\n", "- TestFail: expected (listed in expected-failures.txt)\n"},
	}, {
		name: "flaky test passes its second rerun",
		args: []string{"testdata/events.json", none, results, "v1.2.3", skip, rerun, flaky},
		exit: 0,
		contains: []string{
			"| 2 | 0 | 1 |\n",
			"## Failed\n\nNone.\n",
			"- TestFail: failed, then failed, passed when run again by itself (races)\n",
		},
	}} {
		os.Remove(results)
		_, code := runSummarize(t, c.args...)
		if code != c.exit {
			t.Errorf("%s: exit %d, want %d", c.name, code, c.exit)
		}
		got := read(results)
		for _, want := range c.contains {
			if !strings.Contains(got, want) {
				t.Errorf("%s: RESULTS.md lacks %q:\n%s", c.name, want, got)
			}
		}
	}
}
