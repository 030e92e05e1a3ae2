package broker

// Dynamic broker configs (Kafka's KIP-226): the per-broker and cluster-wide
// overrides that AlterConfigs and IncrementalAlterConfigs store in etcd
// (controller/topic_configs.go). Each broker follows them with a watch and
// keeps the result as an immutable state: its configuration layers for
// DescribeConfigs, and its effective configuration, the static one with the
// dynamic log defaults applied (log.retention.ms, message.max.bytes,
// log.cleanup.policy and the other broker synonyms of topic configs, plus
// producer.id.expiration.ms). When those change, every hosted partition's
// log gets its configuration resolved anew. Other dynamic keys (listeners,
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

	"github.com/strait/strait/controller"
	"github.com/strait/strait/storage"
)

// dynamicConfigState is the dynamic configs applied up to one etcd revision.
type dynamicConfigState struct {
	rev    int64
	layers *brokerLayers
	// effective is the static Config with the dynamic log defaults in
	// LogDefaults (and MinInsyncReplicas).
	effective Config
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
	d.state.Store(&dynamicConfigState{layers: newBrokerLayers(s.cfg, nil, nil), effective: s.cfg, next: make(chan struct{})})
	return d
}

// dynamicConfigs returns the broker's dynamic config follower (New creates
// it; Start loads the configs and starts the watch).
func (s *Server) dynamicConfigs() *dynamicConfigs { return s.dynCfg }

// currentConfig is the broker's configuration with the dynamic log defaults.
func (s *Server) currentConfig() Config { return s.dynamicConfigs().state.Load().effective }

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
		s.goBackground(func() {
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
	layers := newBrokerLayers(s.cfg, set[controller.DefaultBrokerConfigEntity], set[strconv.Itoa(int(s.cfg.NodeID))])
	effective, err := effectiveConfig(s.cfg, layers)
	if err != nil {
		s.logger.Warn("dynamic broker configs do not parse; keeping the previous log defaults", "err", err, "revision", rev)
		effective = old.effective
	}
	next := &dynamicConfigState{rev: rev, layers: layers, effective: effective, next: make(chan struct{})}
	d.state.Store(next)
	close(old.next)
	if effective.LogDefaults != old.effective.LogDefaults {
		s.logger.Info("dynamic broker configs changed the log defaults", "revision", rev)
		// Not on this goroutine: the first load may run inside the
		// partition manager's metadata application, which holds its lock.
		s.goBackground(d.reapply)
	}
}

// reapply gives every hosted partition's log its configuration resolved over
// the current defaults, under the partition manager's lock so that it
// interleaves with metadata changes and never undoes a newer one.
func (d *dynamicConfigs) reapply() {
	s := d.srv
	pm := s.parts
	if pm == nil {
		return
	}
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	pm.mu.Lock()
	defer pm.mu.Unlock()
	effective := d.state.Load().effective
	for _, lt := range *pm.byName.Load() {
		t, ok := s.ctrl.Topic(lt.name)
		if !ok || t.ID != lt.id {
			continue
		}
		cfg, err := effective.TopicLogConfig(t.Configs)
		if err != nil {
			continue // applyTopic has logged it and uses the defaults
		}
		for _, p := range lt.parts {
			if p != nil {
				p.log.SetConfig(cfg)
			}
		}
	}
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

// dynamicLogKeys are the dynamic broker keys Strait applies at runtime
// (DynamicLogConfig's, the broker synonyms of the topic configs, and
// producer.id.expiration.ms).
var dynamicLogKeys = func() map[string]bool {
	m := map[string]bool{"producer.id.expiration.ms": true}
	for _, k := range topicCatalog {
		if k.brokerSynonym != "" {
			m[k.brokerSynonym] = true
		}
	}
	return m
}()

// effectiveConfig is static with the dynamic log keys of layers applied:
// the properties are parsed without and with them, and the fields that
// differ take the dynamic value. Fields a test or an embedder set on the
// Config directly (not through Props) are kept.
func effectiveConfig(static Config, layers *brokerLayers) (Config, error) {
	props := maps.Clone(static.Props)
	if props == nil {
		props = map[string]string{}
	}
	dynamic := false
	for _, m := range []map[string]string{layers.dynamicDefault, layers.dynamicBroker} {
		for k, v := range m {
			if dynamicLogKeys[k] {
				props[k] = v
				dynamic = true
			}
		}
	}
	if !dynamic {
		return static, nil
	}
	base, _, err := ParseConfig(static.Props)
	if err != nil {
		return Config{}, err
	}
	with, _, err := ParseConfig(props)
	if err != nil {
		return Config{}, err
	}
	out := static
	overlayChanged(&out.LogDefaults, base.LogDefaults, with.LogDefaults)
	if with.MinInsyncReplicas != base.MinInsyncReplicas {
		out.MinInsyncReplicas = with.MinInsyncReplicas
	}
	if with.MessageMaxBytes != base.MessageMaxBytes {
		out.MessageMaxBytes = with.MessageMaxBytes
	}
	return out, nil
}

// overlayChanged sets each field of *dst where base and with differ to
// with's value.
func overlayChanged[T any](dst *T, base, with T) {
	d, b, w := reflect.ValueOf(dst).Elem(), reflect.ValueOf(base), reflect.ValueOf(with)
	for i := range d.NumField() {
		if d.Field(i).CanSet() && !b.Field(i).Equal(w.Field(i)) {
			d.Field(i).Set(w.Field(i))
		}
	}
}

// logLevelName is the level Kafka's log4j would name for the broker's
// logger: the lowest level it emits.
func logLevelName(l *slog.Logger) string {
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
