package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for strait itself: run with
// STRAIT_RUN_AS_MAIN=1 it is the command (see TestBinaryExitsNamingTheKey).
func TestMain(m *testing.M) {
	if os.Getenv("STRAIT_RUN_AS_MAIN") == "1" {
		// The arguments are STRAIT_ARGS split at spaces if it is set,
		// else the command line's (a script running the binary).
		if args, ok := os.LookupEnv("STRAIT_ARGS"); ok {
			os.Args = append([]string{"strait"}, strings.Fields(args)...)
		}
		main()
		return
	}
	os.Exit(m.Run())
}

// TestBinaryExitsNamingTheKey: the process, given an invalid value in its
// properties file, its environment or an override, exits non-zero with an
// error naming the key, before it opens any log directory. The keys include
// ones that were once read where used and only warned about.
func TestBinaryExitsNamingTheKey(t *testing.T) {
	dir := t.TempDir()
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte("log.dirs="+filepath.Join(dir, "logs")+"\nreplica.lag.time.max.ms=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args string
		env  []string
		want string
	}{
		{props, nil, "Invalid value 0 for configuration replica.lag.time.max.ms: Value must be at least 1"},
		{"--override log.dirs=" + filepath.Join(dir, "logs") + " --override transaction.state.log.num.partitions=0", nil,
			"Invalid value 0 for configuration transaction.state.log.num.partitions: Value must be at least 1"},
		{"--override log.dirs=" + filepath.Join(dir, "logs"), []string{"KAFKA_GROUP_MAX_SIZE=0"},
			"Invalid value 0 for configuration group.max.size: Value must be at least 1"},
		{"--override log.dirs=" + filepath.Join(dir, "logs"), []string{"KAFKA_CONTROLLED_SHUTDOWN_ENABLE=maybe"},
			"Invalid value maybe for configuration controlled.shutdown.enable: Expected value to be either true or false"},
		// A TLS listener without a key store is refused, never served as plaintext.
		{"--override log.dirs=" + filepath.Join(dir, "logs") + " --override listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", nil,
			`key=ssl.keystore.location`},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0])
		cmd.Env = append(os.Environ(), append([]string{"STRAIT_RUN_AS_MAIN=1", "STRAIT_ARGS=" + tc.args}, tc.env...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("%s %v: %v, want exit status 1\n%s", tc.args, tc.env, err, stderr.String())
			continue
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s %v: stderr lacks %q:\n%s", tc.args, tc.env, tc.want, stderr.String())
		}
		if _, err := os.Stat(filepath.Join(dir, "logs")); err == nil {
			t.Errorf("%s %v: the log directory was created", tc.args, tc.env)
		}
	}
}
