package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestProbesAnswer503WithTheReason(t *testing.T) {
	live, ready := error(nil), errors.New("metadata watch at revision 3, behind etcd's 9")
	srv, err := Listen("127.0.0.1:0", New(), Probes{
		Live:  func() error { return live },
		Ready: func(context.Context) error { return ready },
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + srv.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if code, body := get("/healthz"); code != 200 || body != "ok" {
		t.Errorf("/healthz %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 503 || body != ready.Error() {
		t.Errorf("/readyz %d %q", code, body)
	}
	live = errors.New("broker shutting down")
	if code, body := get("/readyz"); code != 503 || body != "broker shutting down" {
		t.Errorf("/readyz while closing %d %q", code, body)
	}
	if code, _ := get("/healthz"); code != 503 {
		t.Errorf("/healthz while closing %d", code)
	}
	if code, _ := get("/nothing"); code != 404 {
		t.Errorf("/nothing %d", code)
	}
	if resp, err := http.Post("http://"+srv.Addr().String()+"/metrics", "text/plain", nil); err != nil || resp.StatusCode != 405 {
		t.Errorf("POST /metrics: %v %v", resp.Status, err)
	}
}
