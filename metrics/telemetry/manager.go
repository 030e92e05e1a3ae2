package telemetry

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

const (
	// MaxInstances bounds the client instances a broker tracks (Kafka's
	// ClientMetricsManager cache holds 16384); past it the instance that
	// was quiet longest is forgotten.
	MaxInstances = 16384
	// minExpiry is how long an instance outlives its last request at least
	// (Kafka's DEFAULT_CACHE_EXPIRY_MS); it is 3 push intervals if longer.
	minExpiry = 60 * time.Second
)

// AcceptedCompressionTypes are the codecs a client may compress its
// payload with, the broker's preference first (Kafka's order).
var AcceptedCompressionTypes = []int8{4, 3, 1, 2} // zstd, lz4, gzip, snappy

// Client is what the broker knows of the connection a request came on.
type Client struct {
	ClientID        string
	SoftwareName    string
	SoftwareVersion string
	SourceAddress   string
	SourcePort      string
}

// Subscribed is a GetTelemetrySubscriptions answer.
type Subscribed struct {
	InstanceID     [16]byte
	SubscriptionID int32
	Metrics        []string
	IntervalMs     int32
}

// instance is one client instance (Kafka's ClientMetricsInstance).
type instance struct {
	id          [16]byte
	client      Client
	subID       int32
	version     uint64 // of the subscriptions it was matched against
	metrics     []string
	intervalMs  int32
	lastGet     int64 // unix ms, 0: never
	lastPush    int64
	lastSeen    int64
	terminating bool
	lastErr     int16
}

func (in *instance) expiry() int64 {
	return in.lastSeen + max(minExpiry.Milliseconds(), 3*int64(in.intervalMs))
}

// Manager answers GetTelemetrySubscriptions and PushTelemetry.
type Manager struct {
	// Subscriptions returns the CLIENT_METRICS resources' configs; the same
	// map until they change (its identity tells).
	Subscriptions func() map[string]map[string]string
	// MaxBytes is telemetry.max.bytes.
	MaxBytes int32
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Store receives the decoded payloads; nil: payloads are checked and dropped.
	Store *Store

	mu        sync.Mutex
	srcID     uintptr // identity of the configs subs was parsed from
	subs      []Subscription
	version   uint64
	instances map[[16]byte]*instance
	lastSweep int64
}

func (m *Manager) now() int64 {
	if m.Now != nil {
		return m.Now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// refreshLocked reparses the subscriptions when their configs changed.
// Invalid stored configs (written by a newer version) are skipped.
func (m *Manager) refreshLocked() {
	var src map[string]map[string]string
	if m.Subscriptions != nil {
		src = m.Subscriptions()
	}
	id := reflect.ValueOf(src).Pointer()
	if id == m.srcID && m.version > 0 {
		return
	}
	m.srcID = id
	m.subs = m.subs[:0]
	for _, name := range slices.Sorted(maps.Keys(src)) {
		if sub, err := Parse(name, src[name]); err == nil && len(src[name]) > 0 {
			m.subs = append(m.subs, sub)
		}
	}
	m.version++
}

// matches is ClientMetricsInstanceMetadata.isMatch.
func (s *Subscription) matches(id [16]byte, c Client) bool {
	for sel, re := range s.Match {
		var v string
		switch sel {
		case MatchInstanceID:
			v = FormatUUID(id)
		case MatchClientID:
			v = c.ClientID
		case MatchSoftwareName:
			v = c.SoftwareName
		case MatchSoftwareVersion:
			v = c.SoftwareVersion
		case MatchSourceAddress:
			v = c.SourceAddress
		case MatchSourcePort:
			v = c.SourcePort
		}
		if v == "" || !re.MatchString(v) {
			return false
		}
	}
	return true
}

// evaluateLocked (re)computes an instance's subscription: the union of the
// metrics of every matching subscription ("*" if one has all), the
// shortest interval, and the subscription id.
func (m *Manager) evaluateLocked(in *instance) {
	interval := int32(DefaultIntervalMs)
	set := map[string]bool{}
	all := false
	for i := range m.subs {
		s := &m.subs[i]
		if !s.matches(in.id, in.client) {
			continue
		}
		for _, p := range s.Metrics {
			all = all || p == allMetrics
			set[p] = true
		}
		interval = min(interval, s.IntervalMs)
	}
	metrics := slices.Sorted(maps.Keys(set))
	if all {
		metrics = []string{allMetrics}
	}
	if metrics == nil {
		metrics = []string{}
	}
	in.metrics, in.intervalMs, in.version = metrics, interval, m.version
	in.subID = SubscriptionID(metrics, interval, in.id)
}

// SubscriptionID is Kafka's computeSubscriptionId: a CRC32C of the metrics
// (as Java prints a set) and the interval, XORed with the instance id's
// Java hashCode. The metrics are sorted here, so the id does not depend on
// a hash set's order.
func SubscriptionID(metrics []string, intervalMs int32, id [16]byte) int32 {
	b := fmt.Sprintf("[%s]%d", strings.Join(metrics, ", "), intervalMs)
	crc := crc32.Checksum([]byte(b), crc32.MakeTable(crc32.Castagnoli))
	h := binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:])
	return int32(crc) ^ (int32(h>>32) ^ int32(h))
}

// reserved is Kafka's Uuid.RESERVED: the zero id and METADATA_TOPIC_ID (1).
func reserved(id [16]byte) bool {
	var one [16]byte
	one[15] = 1
	return id == [16]byte{} || id == one
}

// instanceLocked returns the instance of id, created for c if unknown and
// re-evaluated if the subscriptions changed since, with its expiry pushed.
func (m *Manager) instanceLocked(id [16]byte, c Client, now int64) *instance {
	m.refreshLocked()
	m.sweepLocked(now)
	in := m.instances[id]
	if in == nil {
		if m.instances == nil {
			m.instances = map[[16]byte]*instance{}
		}
		if len(m.instances) >= MaxInstances {
			m.evictLocked()
		}
		in = &instance{id: id, client: c, lastErr: -1}
		m.instances[id] = in
		m.evaluateLocked(in)
	} else if in.version != m.version {
		// Kafka makes a new instance: the timestamps, the terminating
		// flag and the last error start over, so the client gets its new
		// subscription at once.
		in.lastGet, in.lastPush, in.terminating, in.lastErr = 0, 0, false, -1
		m.evaluateLocked(in)
	}
	in.lastSeen = now
	return in
}

// sweepLocked forgets the expired instances, at most once a second.
func (m *Manager) sweepLocked(now int64) {
	if now-m.lastSweep < 1000 {
		return
	}
	m.lastSweep = now
	for id, in := range m.instances {
		if in.expiry() <= now {
			delete(m.instances, id)
			m.Store.forget(id)
		}
	}
}

// evictLocked forgets the instance seen least recently (the cache is full).
func (m *Manager) evictLocked() {
	var oldest *instance
	for _, in := range m.instances {
		if oldest == nil || in.lastSeen < oldest.lastSeen {
			oldest = in
		}
	}
	if oldest != nil {
		delete(m.instances, oldest.id)
		m.Store.forget(oldest.id)
	}
}

// Get answers GetTelemetrySubscriptions for id (zero: a new instance).
// The error is THROTTLING_QUOTA_EXCEEDED when the client asks again within
// its push interval, as Kafka's validateGetRequest.
func (m *Manager) Get(id [16]byte, c Client) (Subscribed, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if reserved(id) {
		id = m.newIDLocked()
	}
	in := m.instanceLocked(id, c, now)
	if now-max(in.lastGet, in.lastPush) >= int64(in.intervalMs) || (in.lastGet == 0 && in.lastPush == 0) {
		in.lastGet = now
	} else if in.lastErr != kerr.UnknownSubscriptionID.Code && in.lastErr != kerr.UnsupportedCompressionType.Code {
		return Subscribed{}, &ConfigError{kerr.ThrottlingQuotaExceeded,
			fmt.Sprintf("Request from the client [%s] arrived before the next push interval time", FormatUUID(id))}
	}
	in.lastErr = 0
	return Subscribed{InstanceID: id, SubscriptionID: in.subID, Metrics: slices.Clone(in.metrics), IntervalMs: in.intervalMs}, nil
}

func (m *Manager) newIDLocked() [16]byte {
	for {
		var id [16]byte
		_, _ = rand.Read(id[:])
		id[6] = id[6]&0x0f | 0x40 // version 4, as java.util.UUID.randomUUID
		id[8] = id[8]&0x3f | 0x80
		if _, taken := m.instances[id]; !taken && !reserved(id) {
			return id
		}
	}
}

// Push is a PushTelemetry request's fields.
type Push struct {
	InstanceID     [16]byte
	SubscriptionID int32
	Terminating    bool
	Compression    int8
	Metrics        []byte
}

// Push checks a PushTelemetry request as Kafka's validatePushRequest does,
// in its order, then decodes and stores the payload. The error carries
// Kafka's code: INVALID_REQUEST (reserved instance id, a push after a
// terminating one), THROTTLING_QUOTA_EXCEEDED (before the push interval),
// UNKNOWN_SUBSCRIPTION_ID, UNSUPPORTED_COMPRESSION_TYPE,
// TELEMETRY_TOO_LARGE (over telemetry.max.bytes, compressed or not) and
// INVALID_RECORD (an undecodable payload).
func (m *Manager) Push(p Push, c Client) error {
	if reserved(p.InstanceID) {
		return &ConfigError{kerr.InvalidRequest, fmt.Sprintf("Invalid request from the client [%s], invalid client instance id", FormatUUID(p.InstanceID))}
	}
	m.mu.Lock()
	now := m.now()
	in := m.instanceLocked(p.InstanceID, c, now)
	err := m.validatePushLocked(in, p, now)
	in.terminating = p.Terminating
	if err != nil {
		in.lastErr = err.Err.Code
		m.mu.Unlock()
		return err
	}
	in.lastErr = 0
	interval := in.intervalMs
	m.mu.Unlock()
	if len(p.Metrics) == 0 {
		return nil
	}
	// Decoding runs outside the lock: it is the costly part.
	data, derr := decompressPayload(p.Compression, p.Metrics, int64(m.MaxBytes))
	if derr == nil {
		derr = m.Store.put(p.InstanceID, c.ClientID, data, time.UnixMilli(now).Add(max(minExpiry, 3*time.Duration(interval)*time.Millisecond)))
	}
	if derr != nil {
		m.mu.Lock()
		if in := m.instances[p.InstanceID]; in != nil {
			in.lastErr = derr.Err.Code
		}
		m.mu.Unlock()
		return derr
	}
	return nil
}

func (m *Manager) validatePushLocked(in *instance, p Push, now int64) *ConfigError {
	id := FormatUUID(p.InstanceID)
	if in.terminating {
		return &ConfigError{kerr.InvalidRequest, fmt.Sprintf("Client [%s] sent the previous request with state terminating to TRUE, can not accept"+
			"any requests after that", id)}
	}
	// A push right after a GetTelemetrySubscriptions is accepted early: the
	// client jitters its interval (Kafka's maybeUpdatePushRequestTimestamp).
	accept := in.lastGet > in.lastPush || now-in.lastPush >= int64(in.intervalMs) || in.lastPush == 0
	if accept {
		in.lastPush = now
	} else if !p.Terminating {
		return &ConfigError{kerr.ThrottlingQuotaExceeded, fmt.Sprintf("Request from the client [%s] arrived before the next push interval time", id)}
	}
	if p.SubscriptionID != in.subID {
		return &ConfigError{kerr.UnknownSubscriptionID, fmt.Sprintf("Unknown client subscription id for the client [%s]", id)}
	}
	if p.Compression < 0 || p.Compression > 4 {
		return &ConfigError{kerr.UnsupportedCompressionType, fmt.Sprintf("Unknown compression type [%d] is received in telemetry request from [%s]", p.Compression, id)}
	}
	if len(p.Metrics) > int(m.MaxBytes) {
		return &ConfigError{kerr.TelemetryTooLarge, fmt.Sprintf("Telemetry request from [%s] is larger than the maximum allowed size [%d]", id, m.MaxBytes)}
	}
	return nil
}

// Instances is the number of client instances tracked.
func (m *Manager) Instances() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.instances)
}

// FormatUUID is Kafka's Uuid.toString: URL-safe base64 without padding.
func FormatUUID(id [16]byte) string {
	return uuidEncoding.EncodeToString(id[:])
}

var uuidEncoding = base64.RawURLEncoding
