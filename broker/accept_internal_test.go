package broker

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strait/strait/config"
)

// emfileListener fails its first n accepts with EMFILE, as a process out
// of descriptors does, then blocks until closed.
type emfileListener struct {
	n      int
	mu     sync.Mutex
	calls  int
	closed chan struct{}
	once   sync.Once
}

func (l *emfileListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	l.calls++
	fail := l.calls <= l.n
	l.mu.Unlock()
	if fail {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *emfileListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *emfileListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func (l *emfileListener) callCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// TestAcceptEMFILEBacksOff: accepts failing with EMFILE are retried and
// counted, logged once (not once per failure), and do not fail the broker;
// the listener keeps accepting.
func TestAcceptEMFILEBacksOff(t *testing.T) {
	var logs bytes.Buffer
	var logMu sync.Mutex
	s := &Server{
		logger:  slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil)),
		errc:    make(chan error, 1),
		closing: make(chan struct{}),
	}
	fl := &emfileListener{n: 5, closed: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.acceptLoop(&listener{cfg: config.Listener{Name: "PLAINTEXT"}, ln: fl})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for fl.callCount() <= fl.n {
		if time.Now().After(deadline) {
			t.Fatalf("acceptLoop stopped after %d accepts", fl.callCount())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := s.AcceptErrors(); got != int64(fl.n) {
		t.Fatalf("AcceptErrors %d, want %d", got, fl.n)
	}
	select {
	case err := <-s.errc:
		t.Fatalf("EMFILE on accept failed the broker: %v", err)
	default:
	}
	close(s.closing)
	fl.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("acceptLoop did not return after closing")
	}
	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
	if n := strings.Count(out, "accept failed"); n != 1 {
		t.Fatalf("%d log lines for %d failed accepts within a second, want 1:\n%s", n, fl.n, out)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}
