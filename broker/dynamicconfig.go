package broker

// Dynamic broker configs (Kafka's KIP-226): the per-broker and cluster-wide
// overrides that AlterConfigs and IncrementalAlterConfigs store in etcd
// (controller/topic_configs.go). Each broker follows them with a watch and
// keeps the result as an immutable state: its configuration layers for
// DescribeConfigs, and its effective configuration, the static one with the
// dynamic log defaults applied (log.retention.ms, message.max.bytes,
// log.cleanup.policy and the other broker synonyms of topic configs, plus
// producer.id.expiration.ms, and the replication throttle rates):
// config.Config.WithDynamic parses them once
// into a new typed value, compared with the previous one. When those
// change, every hosted partition's log gets its configuration resolved
// anew. Other dynamic keys (listeners,
// SSL, thread counts, ...) are stored and described as Kafka does, but take
// effect only at the next start, when they are part of the properties.

import (
	"context"
	"log/slog"
	"maps"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strait/strait/config"
	"github.com/strait/strait/controller"
	"github.com/strait/strait/storage"
)

// dynamicConfigState is the dynamic configs applied up to one etcd revision.
type dynamicConfigState struct {
	rev    int64
	layers *config.Layers
	// effective is the static Config with the dynamic log defaults in
	// LogDefaults (and MinInsyncReplicas).
	effective config.Config
	next      chan struct{} // closed when a newer state replaces this one
}

// dynamicConfigs follows this broker's dynamic configs.
type dynamicConfigs struct {
	srv     *Server
	state   atomic.Pointer[dynamicConfigState]
	applyMu sync.Mutex // serializes apply (the watch) and reapply
}

// newDynamicConfigs returns a follower holding the static configuration
// until start loads the dynamic configs from etcd.
func newDynamicConfigs(s *Server) *dynamicConfigs {
	d := &dynamicConfigs{srv: s}
	d.state.Store(&dynamicConfigState{layers: config.NewLayers(s.cfg, nil, nil), effective: s.cfg, next: make(chan struct{})})
	return d
}

// dynamicConfigs returns the broker's dynamic config follower (New creates
// it; Start loads the configs and starts the watch).
func (s *Server) dynamicConfigs() *dynamicConfigs { return s.dynCfg }

// currentConfig is the broker's configuration with the dynamic log defaults.
func (s *Server) currentConfig() config.Config { return s.dynamicConfigs().state.Load().effective }

// topicLogConfig resolves a topic's log configuration over the broker's
// current defaults, static and dynamic. The partition manager resolves with
// it so that logs opened or reconfigured after a dynamic change get it too.
func (s *Server) topicLogConfig(topicConfigs map[string]string) (storage.LogConfig, error) {
	return s.currentConfig().TopicLogConfig(topicConfigs)
}

func (d *dynamicConfigs) start() {
	s := d.srv
	if s.ctrl == nil {
		return // not started: the static configuration is all there is
	}
	// The watch stops with s.ctx (Close), or with the controller's own
	// shutdown.
	ctx := s.ctx
	load := func() error { return s.ctrl.WatchBrokerConfigs(ctx, 10*time.Second, d.apply) }
	if err := load(); err != nil {
		s.logger.Warn("loading dynamic broker configs failed; using the static ones and retrying", "err", err)
		s.bg.Go(func() {
			for ctx.Err() == nil {
				select {
				case <-time.After(2 * time.Second):
				case <-ctx.Done():
					return
				}
				if load() == nil {
					return
				}
			}
		})
	}
}

// apply installs the dynamic configs of one revision (called by the watch).
func (d *dynamicConfigs) apply(set controller.BrokerConfigSet, rev int64) {
	s := d.srv
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	old := d.state.Load()
	layers := config.NewLayers(s.cfg, set[controller.DefaultBrokerConfigEntity], set[strconv.Itoa(int(s.cfg.NodeID))])
	effective, err := s.cfg.WithDynamic(layers)
	if err != nil {
		s.logger.Warn("dynamic broker configs do not parse; keeping the previous log defaults", "err", err, "revision", rev)
		effective = old.effective
	}
	next := &dynamicConfigState{rev: rev, layers: layers, effective: effective, next: make(chan struct{})}
	d.state.Store(next)
	close(old.next)
	for name, tlsCfg := range changedListenerTLS(old.effective, effective) {
		if st := s.listenerTLS(name); st != nil {
			if err := st.Reload(tlsCfg); err != nil {
				s.logger.Warn("dynamic ssl.* update not applied; the listener keeps its key and trust stores", "listener", name, "err", err, "revision", rev)
			} else {
				s.logger.Info("listener key and trust stores reloaded", "listener", name, "revision", rev)
			}
		}
	}
	if l, ol := effective.Limits, old.effective.Limits; l.MaxConnections != ol.MaxConnections ||
		l.MaxConnectionsPerIP != ol.MaxConnectionsPerIP || !maps.Equal(l.ListenerMaxConnections, ol.ListenerMaxConnections) {
		s.quotas.update(l)
		s.logger.Info("connection limits changed", "max.connections", l.MaxConnections,
			"max.connections.per.ip", l.MaxConnectionsPerIP, "listener_max_connections", l.ListenerMaxConnections, "revision", rev)
	}
	if r, or := effective.Replication, old.effective.Replication; r.LeaderThrottledRate != or.LeaderThrottledRate ||
		r.FollowerThrottledRate != or.FollowerThrottledRate || r.AlterLogDirsIORate != or.AlterLogDirsIORate {
		s.setReplicationThrottles(r)
		s.logger.Info("replication throttles changed", "leader.replication.throttled.rate", r.LeaderThrottledRate,
			"follower.replication.throttled.rate", r.FollowerThrottledRate,
			"replica.alter.log.dirs.io.max.bytes.per.second", r.AlterLogDirsIORate, "revision", rev)
	}
	if effective.Log.Defaults != old.effective.Log.Defaults {
		s.logger.Info("dynamic broker configs changed the log defaults", "revision", rev)
		// Not on this goroutine: the first load may run inside the
		// partition manager's metadata application, which holds its lock.
		s.bg.Go(d.reapply)
	}
}

// reapply gives every hosted partition's log its configuration resolved over
// the current defaults (replication.Manager.ReconfigureLogs, which
// interleaves with metadata changes and never undoes a newer one).
func (d *dynamicConfigs) reapply() {
	rm := d.srv.replicas
	if rm == nil {
		return
	}
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	rm.ReconfigureLogs()
}

// waitForRevision blocks until the watch has applied rev (or ctx ends).
func (d *dynamicConfigs) waitForRevision(ctx context.Context, rev int64) error {
	for {
		st := d.state.Load()
		if st.rev >= rev {
			return nil
		}
		select {
		case <-st.next:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// loggerLevelName is the level Kafka's log4j would name for the broker's
// logger: the lowest level it emits.
func loggerLevelName(l *slog.Logger) string {
	ctx := context.Background()
	switch {
	case l.Enabled(ctx, slog.LevelDebug):
		return "DEBUG"
	case l.Enabled(ctx, slog.LevelInfo):
		return "INFO"
	case l.Enabled(ctx, slog.LevelWarn):
		return "WARN"
	default:
		return "ERROR"
	}
}

// changedListenerTLS are the TLS settings of next's listeners that differ
// from prev's (a dynamic update of a listener's key or trust store).
func changedListenerTLS(prev, next config.Config) map[string]*config.TLS {
	var changed map[string]*config.TLS
	for name, ls := range next.Security.Listeners {
		if ls.TLS != nil && !reflect.DeepEqual(ls.TLS, prev.Security.Listeners[name].TLS) {
			if changed == nil {
				changed = map[string]*config.TLS{}
			}
			changed[name] = ls.TLS
		}
	}
	return changed
}
