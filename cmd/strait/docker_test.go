package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dockerfileHeredoc returns the body of the Dockerfile's COPY heredoc that
// writes dest.
func dockerfileHeredoc(t *testing.T, dockerfile, dest string) string {
	t.Helper()
	re := regexp.MustCompile(`(?ms)^COPY [^\n]*<<'?EOF'? ` + regexp.QuoteMeta(dest) + `\n(.*?)^EOF$`)
	m := re.FindStringSubmatch(dockerfile)
	if m == nil {
		t.Fatalf("the Dockerfile writes no %s with a heredoc", dest)
	}
	return m[1]
}

// TestDockerImageEntryPoint runs the image's /etc/kafka/docker/run and its
// default server.properties, as the Dockerfile writes them, outside a
// container (no container runtime needed): its paths moved to a temporary
// directory and strait being this test binary. The defaults serve on every
// interface, the environment and the arguments go over them, a file in
// /mnt/shared/config replaces them, and the ready file appears.
func TestDockerImageEntryPoint(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := string(b)
	props := dockerfileHeredoc(t, dockerfile, "/etc/strait/server.properties")
	script := dockerfileHeredoc(t, dockerfile, "/etc/kafka/docker/run")
	if !strings.Contains(dockerfile, `CMD ["/etc/kafka/docker/run"]`) || !strings.Contains(props, "listeners=PLAINTEXT://:9092\n") {
		t.Fatalf("the image's command or default listener changed:\n%s", dockerfile)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("the entry point is a sh script and this machine has no sh: %v", err)
	}

	for _, fileInput := range []bool{false, true} {
		root := t.TempDir()
		paths := strings.NewReplacer(
			"/usr/local/bin/strait", os.Args[0],
			"/etc/strait", filepath.Join(root, "etc"),
			"/mnt/shared/config", filepath.Join(root, "mnt"),
			"/var/lib/strait", filepath.Join(root, "var"),
			"/tmp/strait.ready", filepath.Join(root, "ready"),
		)
		for _, d := range []string{"etc", "mnt"} {
			if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		// Port 0: the image's 9092 may be taken on this machine.
		defaults := strings.Replace(paths.Replace(props), ":9092", ":0", 1)
		if err := os.WriteFile(filepath.Join(root, "etc", "server.properties"), []byte(defaults), 0o644); err != nil {
			t.Fatal(err)
		}
		if fileInput {
			mounted := "listeners=PLAINTEXT://127.0.0.1:0,FILE://127.0.0.1:0\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,FILE:PLAINTEXT\nlog.dirs=" + filepath.Join(root, "mounted") + "\n"
			if err := os.WriteFile(filepath.Join(root, "mnt", "server.properties"), []byte(mounted), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run := filepath.Join(root, "run")
		if err := os.WriteFile(run, []byte(paths.Replace(script)), 0o755); err != nil {
			t.Fatal(err)
		}
		// The environment over the file, the arguments over both.
		args, wantID := []string{run}, "node.id=5"
		if fileInput {
			args, wantID = append(args, "--override", "node.id=7"), "node.id=7"
		}
		cmd := exec.Command(sh, args...)
		cmd.Env = append(os.Environ(), "STRAIT_RUN_AS_MAIN=1", "KAFKA_NODE_ID=5")
		var stderr syncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &proc{cmd: cmd, stderr: &stderr, done: make(chan struct{})}
		go func() { p.err = cmd.Wait(); close(p.done) }()
		t.Cleanup(func() {
			select {
			case <-p.done:
			default:
				cmd.Process.Kill()
				<-p.done
			}
		})
		lines := p.readyLines(t, filepath.Join(root, "ready"), 30*time.Second)
		dataDir := filepath.Join(root, "var", "data")
		if fileInput {
			dataDir = filepath.Join(root, "mounted")
			if len(lines) != 2 || !strings.HasPrefix(lines[1], "FILE://") {
				t.Errorf("file input: ready file %q", lines)
			}
		} else if len(lines) != 1 || !strings.HasPrefix(lines[0], "PLAINTEXT://127.0.0.1:") {
			t.Errorf("defaults: ready file %q", lines)
		}
		if !strings.Contains(stderr.String(), `msg="strait ready"`) || !strings.Contains(stderr.String(), wantID) {
			t.Errorf("file input %v: want %s:\n%s", fileInput, wantID, stderr.String())
		}
		if _, err := os.Stat(filepath.Join(dataDir, ".lock")); err != nil {
			t.Errorf("file input %v: data not in %s: %v", fileInput, dataDir, err)
		}
		// exec: the signal reaches strait itself, as PID 1 in the container.
		cmd.Process.Signal(syscall.SIGTERM)
		if c := p.exitCode(t, 30*time.Second); c != 0 {
			t.Fatalf("exit code %d:\n%s", c, stderr.String())
		}
	}
}
