package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Probes are what /healthz and /readyz ask the broker.
type Probes struct {
	// Live is nil while the broker runs (it has not failed or begun to
	// close); /healthz answers 503 with its error otherwise.
	Live func() error
	// Ready is nil when the broker serves clients: started, registered,
	// etcd reachable, caught up on the metadata watch.
	Ready func(ctx context.Context) error
}

// Server is the HTTP listener of http.listener: /metrics, /healthz,
// /readyz, and what else a caller mounts on Mux before Serve.
type Server struct {
	Mux *http.ServeMux
	ln  net.Listener
	srv *http.Server
}

// Listen binds addr (host:port) and routes /metrics to m's registry and the
// probes to p. It does not serve until Serve.
func Listen(addr string, m *Metrics, p Probes, logger *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.InstrumentMetricHandler(m.Registry,
		promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{ErrorLog: slogAdapter{logger}})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		answer(w, p.Live())
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := p.Live(); err != nil {
			answer(w, err)
			return
		}
		answer(w, p.Ready(ctx))
	})
	return &Server{Mux: mux, ln: ln, srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}}, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until Close; it returns nil then.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close stops accepting and closes open connections.
func (s *Server) Close() error { return s.srv.Close() }

func answer(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, err)
		return
	}
	fmt.Fprintln(w, "ok")
}

// slogAdapter is promhttp's error log on the broker's logger.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Println(v ...any) { a.l.Warn("metrics scrape: " + fmt.Sprint(v...)) }
