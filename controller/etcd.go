package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap/zapcore"
)

// embeddedReadyTimeout bounds the wait for the embedded member to elect itself
// when the caller's context has no deadline.
const embeddedReadyTimeout = time.Minute

// startEmbeddedMember starts the embedded etcd member m in dataDir and returns
// it with an in-process client, once the member has joined a cluster with a
// leader (with peers, that needs a majority of the initial cluster started).
// On error nothing is left running.
func startEmbeddedMember(ctx context.Context, dataDir string, m embeddedMember, sec EtcdSecurity, log *slog.Logger, quiet *atomic.Bool) (*embed.Etcd, *clientv3.Client, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dataDir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newZapLogger(log, zapcore.ErrorLevel, quiet))
	// A fresh single member elects itself 1 to ElectionMs/TickMs ticks after
	// start (etcd advances the rest), so a short election timeout makes start
	// fast (about 20-60 ms to ready); it is safe with no peers to time out.
	// Ticks cost idle CPU (about 1% of a core at 10 ms, 3% at 1 ms), hence 10.
	// Members with peers default to etcd's own 100 ms / 1 s.
	m.apply(cfg)
	sec.applyEmbedded(cfg)
	cfg.EnableGRPCGateway = false
	// A topic is created by one transaction of 1 + partitions operations.
	cfg.MaxTxnOps = embeddedMaxTxnOps
	cfg.MaxRequestBytes = embeddedMaxRequestBytes
	// Keep an hour of history: enough for any watcher to catch up.
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = "1h"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("controller: starting embedded etcd in %s: %w", dataDir, err)
	}
	timer := time.NewTimer(embeddedReadyTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err = <-e.Err():
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = errors.New("timed out waiting for the member to be ready")
	}
	if err != nil {
		quiet.Store(true)
		e.Close()
		quiet.Store(false)
		return nil, nil, fmt.Errorf("controller: starting embedded etcd in %s: %w", dataDir, err)
	}
	return e, v3client.New(e.Server), nil
}

// connectEtcd returns a client of the etcd cluster at endpoints. The dial is
// lazy: the first request reports an unreachable cluster.
// With etcd's auth enabled the client logs in as sec.Username.
func connectEtcd(endpoints []string, sec EtcdSecurity, log *slog.Logger, quiet *atomic.Bool) (*clientv3.Client, error) {
	tlsCfg, err := sec.clientTLS()
	if err != nil {
		return nil, err
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		DialTimeout:        externalDialTimeoutMs * time.Millisecond,
		Logger:             newZapLogger(log, zapcore.WarnLevel, quiet),
		MaxCallSendMsgSize: clientMaxCallSendMsgSize,
		TLS:                tlsCfg,
		Username:           sec.Username,
		Password:           sec.Password,
	})
	if err != nil {
		return nil, fmt.Errorf("controller: connecting to etcd %v: %w", endpoints, err)
	}
	return client, nil
}

// embeddedClientURL is the URL other processes reach the embedded etcd at,
// "" when it has no client listener (the default: see etcd_security.go).
func embeddedClientURL(e *embed.Etcd) string {
	if e == nil || len(e.Clients) == 0 {
		return ""
	}
	scheme := "http"
	if urls := e.Config().ListenClientUrls; len(urls) > 0 && urls[0].Scheme == "https" {
		scheme = "https"
	}
	return scheme + "://" + e.Clients[0].Addr().String()
}

// EmbeddedClientURL is the URL of the embedded etcd's first client
// listener, "" with an external etcd or none configured
// (etcd.listen.client.urls).
func (c *Controller) EmbeddedClientURL() string { return embeddedClientURL(c.etcd) }
