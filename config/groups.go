package config

// Group configs (KIP-848's GROUP config resources, `kafka-configs
// --entity-type groups`): Kafka 4.4's GroupConfig keys, their validation
// against the broker's group.* bounds (ControllerConfigurationValidator ->
// GroupConfig.validate), the values a group runs with (GroupConfig.evaluate:
// an override outside the broker's current bounds is capped), and the
// DescribeConfigs entries of a GROUP resource (ConfigHelper.createGroupConfigEntry).

import (
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupCatalogKey is one key of GroupConfig's ConfigDef.
type groupCatalogKey struct {
	name     string
	typ      configType
	def      *string // Kafka's default, rendered; nil: none
	min      *int64  // ConfigDef's Range.atLeast
	internal bool    // listed by DescribeConfigs only when set
	// brokerSynonym is the broker key that gives the group's value when
	// the group does not set it (GroupConfig.ALL_GROUP_CONFIG_SYNONYMS).
	brokerSynonym string
	doc           string
}

func i64(n int64) *int64 { return &n }

// groupCatalog is GroupConfig.CONFIG_DEF of Kafka 4.4, in definition order
// (the order Kafka parses, hence validates, them in).
var groupCatalog = []groupCatalogKey{
	{"consumer.session.timeout.ms", typeInt, ptr("45000"), i64(1), false, "group.consumer.session.timeout.ms", "The timeout to detect client failures when using the consumer group protocol."},
	{"consumer.heartbeat.interval.ms", typeInt, ptr("5000"), i64(1), false, "group.consumer.heartbeat.interval.ms", "The heartbeat interval given to the members of a consumer group."},
	{"consumer.assignment.interval.ms", typeInt, ptr("1000"), i64(0), false, "group.consumer.assignment.interval.ms", "The interval between assignment updates for a consumer group."},
	{"consumer.assignor.offload.enable", typeBoolean, ptr("true"), nil, true, "group.consumer.assignor.offload.enable", "Whether to offload consumer group assignment to a group coordinator background thread."},
	{"share.session.timeout.ms", typeInt, ptr("45000"), i64(1), false, "group.share.session.timeout.ms", "The timeout to detect client failures when using the share group protocol."},
	{"share.heartbeat.interval.ms", typeInt, ptr("5000"), i64(1), false, "group.share.heartbeat.interval.ms", "The heartbeat interval given to the members of a share group."},
	{"share.record.lock.duration.ms", typeInt, ptr("30000"), i64(1000), false, "group.share.record.lock.duration.ms", "The record acquisition lock duration in milliseconds for share groups."},
	{"share.delivery.count.limit", typeInt, ptr("5"), i64(2), false, "group.share.delivery.count.limit", "The maximum number of delivery attempts for a record delivered to a share group."},
	{"share.partition.max.record.locks", typeInt, ptr("2000"), i64(100), false, "group.share.partition.max.record.locks", "Share-group record lock limit per share-partition."},
	{"share.auto.offset.reset", typeString, ptr("latest"), nil, false, "", "The strategy to initialize the share-partition start offset. <ul><li>earliest: automatically reset the offset to the earliest offset</li><li>latest: automatically reset the offset to the latest offset</li><li>by_duration:&lt;duration&gt;: automatically reset the offset to a configured duration from the current timestamp. &lt;duration&gt; must be specified in ISO8601 format (PnDTnHnMn.nS). Negative duration is not allowed.</li><li>anything else: throw exception to the share consumer.</li></ul>"},
	{"share.isolation.level", typeString, ptr("read_uncommitted"), nil, false, "", `Controls how to read records written transactionally. If set to "read_committed", the share group will only deliver transactional records which have been committed. If set to "read_uncommitted", the share group will return all messages, even transactional messages which have been aborted. Non-transactional records will be returned unconditionally in either mode.`},
	{"share.renew.acknowledge.enable", typeBoolean, ptr("true"), nil, false, "", "Whether the renew acknowledge type is enabled for the share group."},
	{"share.assignment.interval.ms", typeInt, ptr("1000"), i64(0), false, "group.share.assignment.interval.ms", "The interval between assignment updates for a share group."},
	{"share.assignor.offload.enable", typeBoolean, ptr("true"), nil, true, "group.share.assignor.offload.enable", "Whether to offload share group assignment to a group coordinator background thread."},
	{"streams.session.timeout.ms", typeInt, ptr("45000"), i64(1), false, "group.streams.session.timeout.ms", "The timeout to detect client failures when using the streams group protocol."},
	{"streams.heartbeat.interval.ms", typeInt, ptr("5000"), i64(1), false, "group.streams.heartbeat.interval.ms", "The heartbeat interval given to the members."},
	{"streams.num.standby.replicas", typeInt, ptr("0"), i64(0), false, "group.streams.num.standby.replicas", "The number of standby replicas for each task."},
	{"streams.initial.rebalance.delay.ms", typeInt, ptr("3000"), i64(0), false, "group.streams.initial.rebalance.delay.ms", "The amount of time the group coordinator will wait for more streams clients to join a new group before performing the first rebalance. A longer delay means potentially fewer rebalances."},
	{"streams.assignment.interval.ms", typeInt, ptr("1000"), i64(0), false, "group.streams.assignment.interval.ms", "The interval between assignment updates for a streams group."},
	{"streams.assignor.offload.enable", typeBoolean, ptr("true"), nil, true, "group.streams.assignor.offload.enable", "Whether to offload streams group assignment to a group coordinator background thread."},
	{"streams.task.offset.interval.ms", typeInt, ptr("60000"), i64(1), true, "group.streams.task.offset.interval.ms", "The interval in which the warmup task changelog offsets on a client are updated on the broker. The offsets are sent with the next heartbeat after this time has passed."},
	{"streams.num.warmup.replicas", typeInt, ptr("2"), i64(0), true, "group.streams.num.warmup.replicas", "The maximum number of warmup task replicas."},
	{"streams.rack.aware.assignment.tags", typeList, ptr(""), nil, false, "group.streams.rack.aware.assignment.tags", "List of client tag keys used to distribute standby replicas across Kafka Streams instances. When configured, and the used broker-side assignor supports it, it will make a best-effort to distribute standby tasks over each client tag dimension."},
	{"streams.acceptable.recovery.lag", typeLong, ptr("10000"), i64(0), true, "group.streams.acceptable.recovery.lag", "The maximum acceptable lag (number of offsets to catch up) for a client to be considered caught-up enough to receive an active task assignment."},
	{"streams.assignor.name", typeString, nil, nil, false, "group.streams.assignors", "The task assignor to use for this streams group, selected by short name from the assignors registered via the broker configuration group.streams.assignors. When unset, the group defaults to the first assignor configured in the broker's group.streams.assignors setting. Changing the assignor does not trigger a rebalance for the group; the new assignor takes effect on the next rebalance."},
	{"errors.deadletterqueue.topic.name", typeString, ptr(""), nil, false, "", "The name of the topic to be used as the dead-letter queue (DLQ) topic for this share group. If blank (the default), the group does not have a DLQ topic."},
	{"errors.deadletterqueue.copy.record.enable", typeBoolean, ptr("false"), nil, false, "", "When writing onto the dead-letter queue topic, whether to copy the original record onto the DLQ topic, or just write a record containing the context information headers."},
}

var groupCatalogByName = func() map[string]*groupCatalogKey {
	m := make(map[string]*groupCatalogKey, len(groupCatalog))
	for i := range groupCatalog {
		m[groupCatalog[i].name] = &groupCatalog[i]
	}
	return m
}()

// IsGroupKey reports whether name is a group config Kafka knows.
func IsGroupKey(name string) bool { return groupCatalogByName[name] != nil }

// brokerDefaults of the internal broker keys the group bounds read, which
// the broker catalog does not list (GroupCoordinatorConfig's defaults).
var internalGroupBrokerDefaults = map[string]string{
	"group.streams.max.warmup.replicas":         "20",
	"group.streams.min.task.offset.interval.ms": "15000",
	"group.streams.task.offset.interval.ms":     "60000",
	"group.streams.num.warmup.replicas":         "2",
	"group.streams.acceptable.recovery.lag":     "10000",
	"group.consumer.assignor.offload.enable":    "true",
	"group.share.assignor.offload.enable":       "true",
	"group.streams.assignor.offload.enable":     "true",
}

// brokerValue is a broker key's value as KafkaConfig holds it, falling back
// to the defaults of the internal keys.
func (b *Layers) brokerValue(name string) *string {
	if v := b.value(name); v != nil {
		return v
	}
	if v, ok := internalGroupBrokerDefaults[name]; ok {
		return &v
	}
	return nil
}

// brokerInt is a numeric broker key's current value (0 if unparsable,
// which Parse has already refused for the keys read here).
func (b *Layers) brokerInt(name string) int64 {
	v := b.brokerValue(name)
	if v == nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(*v), 10, 64)
	return n
}

// groupRange is a key checked against [min, max] broker keys.
type groupRange struct{ key, minKey, maxKey string }

// groupRanges are GroupConfig.validateValues' range checks, in its order.
var groupRanges = []groupRange{
	{"consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"},
	{"consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"},
	{"consumer.assignment.interval.ms", "group.consumer.min.assignment.interval.ms", "group.consumer.max.assignment.interval.ms"},
	{"share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"},
	{"share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"},
	{"share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"},
	{"share.delivery.count.limit", "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"},
	{"share.partition.max.record.locks", "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"},
	{"share.assignment.interval.ms", "group.share.min.assignment.interval.ms", "group.share.max.assignment.interval.ms"},
	{"streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms"},
	{"streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"},
	{"streams.num.standby.replicas", "", "group.streams.max.standby.replicas"},
	{"streams.assignment.interval.ms", "group.streams.min.assignment.interval.ms", "group.streams.max.assignment.interval.ms"},
	{"streams.task.offset.interval.ms", "group.streams.min.task.offset.interval.ms", ""},
	{"streams.num.warmup.replicas", "", "group.streams.max.warmup.replicas"},
}

// sessionHeartbeatPairs are the cross-key checks: session timeout above the
// heartbeat interval, the broker's value standing in for an absent one.
var sessionHeartbeatPairs = [][2]string{
	{"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"},
	{"share.session.timeout.ms", "share.heartbeat.interval.ms"},
	{"streams.session.timeout.ms", "streams.heartbeat.interval.ms"},
}

// javaDuration is java.time.Duration.parse's grammar.
var javaDuration = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?)([0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// validShareAutoOffsetReset is ShareGroupAutoOffsetResetStrategy's
// validator: latest, earliest, or by_duration:<non-negative ISO-8601 duration>.
func validShareAutoOffsetReset(key, value string) error {
	if value == "latest" || value == "earliest" {
		return nil
	}
	if d, ok := strings.CutPrefix(value, "by_duration:"); ok {
		if m := javaDuration.FindStringSubmatch(d); m != nil && (m[2] != "" || m[3] != "" && m[3] != "T") && !durationNegative(m) {
			return nil
		}
	}
	return invalidValue(key, value, "Invalid value `"+value+"` for configuration "+key+
		". The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")
}

// durationNegative reports whether a parsed Java duration is below zero.
func durationNegative(m []string) bool { return javaDurationSeconds(m) < 0 }

// javaDurationSeconds is a parsed Java duration in seconds.
func javaDurationSeconds(m []string) float64 {
	num := func(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }
	secs := num(m[2])*86400 + num(m[4])*3600 + num(m[5])*60
	s := num(m[7])
	if m[8] != "" {
		s += num("0." + m[8])
	}
	if m[6] == "-" {
		s = -s
	}
	secs += s
	if m[1] == "-" {
		secs = -secs
	}
	return secs
}

// groupConfigError is an INVALID_CONFIG with Kafka's message.
func groupConfigError(key, msg string) error {
	return &TopicConfigError{Err: kerr.InvalidConfig, Key: key, Message: msg}
}

// ValidateGroupConfigs checks a group's whole new set of configs as Kafka's
// GroupConfig.validate does: the names ("Unknown group config name: x"), each
// value's type and ConfigDef validator in definition order, then the bounds
// the broker's group.* keys set, the session-above-heartbeat rules, the DLQ
// topic name and the streams assignor. The error is a *TopicConfigError
// wrapping kerr.InvalidConfig, its Message Kafka's.
func (b *Layers) ValidateGroupConfigs(configs map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		if groupCatalogByName[name] == nil {
			return groupConfigError(name, "Unknown group config name: "+name)
		}
	}
	ints := map[string]int64{}
	for _, k := range groupCatalog {
		raw, ok := configs[k.name]
		if !ok {
			continue
		}
		if err := checkType(k.name, raw, k.typ); err != nil {
			return groupConfigError(k.name, err.Error())
		}
		s := strings.TrimSpace(raw)
		switch k.name {
		case "share.auto.offset.reset":
			if err := validShareAutoOffsetReset(k.name, s); err != nil {
				return groupConfigError(k.name, err.Error())
			}
		case "share.isolation.level":
			if err := validIn(k.name, s, "read_committed", "read_uncommitted"); err != nil {
				return groupConfigError(k.name, err.Error())
			}
		}
		if k.typ == typeInt || k.typ == typeLong {
			n, _ := strconv.ParseInt(s, 10, 64)
			if k.min != nil && n < *k.min {
				return groupConfigError(k.name, invalidValue(k.name, raw, "Value must be at least "+strconv.FormatInt(*k.min, 10)).Error())
			}
			ints[k.name] = n
		}
	}
	for _, r := range groupRanges {
		n, ok := ints[r.key]
		if !ok {
			continue
		}
		switch {
		case r.minKey != "" && r.maxKey != "":
			lo, hi := b.brokerInt(r.minKey), b.brokerInt(r.maxKey)
			if n < lo || n > hi {
				return groupConfigError(r.key, r.key+" must be in the range "+strconv.FormatInt(lo, 10)+" to "+strconv.FormatInt(hi, 10)+" inclusive.")
			}
		case r.maxKey != "":
			if hi := b.brokerInt(r.maxKey); n > hi {
				return groupConfigError(r.key, r.key+" must be less than or equal to "+strconv.FormatInt(hi, 10))
			}
		default:
			if lo := b.brokerInt(r.minKey); n < lo {
				return groupConfigError(r.key, r.key+" must be greater than or equal to "+strconv.FormatInt(lo, 10))
			}
		}
	}
	for _, p := range sessionHeartbeatPairs {
		session, hasSession := ints[p[0]]
		heartbeat, hasHeartbeat := ints[p[1]]
		if !hasSession && !hasHeartbeat {
			continue
		}
		if !hasSession {
			session = b.brokerInt(groupCatalogByName[p[0]].brokerSynonym)
		}
		if !hasHeartbeat {
			heartbeat = b.brokerInt(groupCatalogByName[p[1]].brokerSynonym)
		}
		if session <= heartbeat {
			return groupConfigError(p[0], p[0]+" must be greater than "+p[1])
		}
	}
	if v, ok := configs["errors.deadletterqueue.topic.name"]; ok && strings.HasPrefix(strings.TrimSpace(v), "__") {
		return groupConfigError("errors.deadletterqueue.topic.name", "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
	}
	if v, ok := configs["streams.assignor.name"]; ok {
		name := strings.TrimSpace(v)
		var registered []string
		if l := b.brokerValue("group.streams.assignors"); l != nil {
			registered = parseList(*l)
		}
		if !slices.Contains(registered, name) {
			return groupConfigError("streams.assignor.name", "streams.assignor.name '"+name+
				"' is not a registered task assignor. Registered assignors are: ["+strings.Join(registered, ", ")+"].")
		}
	}
	return nil
}

// groupValue is the value a group runs with for key k: its override, else
// the broker key's, else Kafka's default; rendered as DescribeConfigs shows it.
func (b *Layers) groupValue(k *groupCatalogKey, overrides map[string]string) *string {
	if v, ok := overrides[k.name]; ok {
		r := renderValue(v, k.typ)
		return &r
	}
	if k.brokerSynonym != "" {
		if v := b.brokerValue(k.brokerSynonym); v != nil {
			if k.name == "streams.assignor.name" {
				// The broker key lists the assignors; the first is the default.
				l := parseList(*v)
				if len(l) == 0 {
					return nil
				}
				return &l[0]
			}
			r := renderValue(*v, k.typ)
			return &r
		}
	}
	return k.def
}

// GroupEntries are the entries of a GROUP resource
// (ConfigHelper.createGroupConfigEntry): every non-internal group config, and
// the internal ones the group sets, sorted by name. An unset key's source and
// synonyms are its broker key's layers (or Kafka's default of the group key
// itself when it has no broker key); a set one has GROUP_CONFIG on top.
func (b *Layers) GroupEntries(overrides map[string]string, withSynonyms, withDocs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for i := range groupCatalog {
		k := &groupCatalog[i]
		_, set := overrides[k.name]
		if k.internal && !set {
			continue
		}
		value := b.groupValue(k, overrides)
		var syns []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
		if set {
			s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			s.Name, s.Value, s.Source = k.name, value, kmsg.ConfigSourceGroupConfig
			syns = append(syns, s)
		}
		if k.brokerSynonym != "" {
			bs := b.synonyms(k.brokerSynonym, brokerConfigSynonyms(k.brokerSynonym), false)
			if len(bs) == 0 {
				if d, ok := internalGroupBrokerDefaults[k.brokerSynonym]; ok {
					s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					s.Name, s.Value, s.Source = k.brokerSynonym, &d, kmsg.ConfigSourceDefaultConfig
					bs = append(bs, s)
				}
			}
			syns = append(syns, bs...)
		} else if k.def != nil {
			s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			s.Name, s.Value, s.Source = k.name, k.def, kmsg.ConfigSourceDefaultConfig
			syns = append(syns, s)
		}
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name = k.name
		setValueAndSource(&e, value, syns, false, withSynonyms)
		e.ConfigType = wireConfigType(k.typ, true)
		if withDocs {
			e.Documentation = ptr(k.doc)
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b kmsg.DescribeConfigsResponseResourceConfig) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// GroupStreamsSettings are the session timeout, heartbeat interval and
// standby replicas a streams group runs with (GroupConfig.evaluate): its
// overrides, capped to the broker's group.streams.min/max bounds, else the
// given broker values.
func (b *Layers) GroupStreamsSettings(overrides map[string]string, session, heartbeat time.Duration, standby int32) (time.Duration, time.Duration, int32) {
	pick := func(key, minKey, maxKey string, def int64) int64 {
		v, ok := overrides[key]
		if !ok {
			return def
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return def
		}
		if maxKey != "" {
			n = min(n, b.brokerInt(maxKey))
		}
		if minKey != "" {
			n = max(n, b.brokerInt(minKey))
		}
		return n
	}
	s := pick("streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms", session.Milliseconds())
	h := pick("streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms", heartbeat.Milliseconds())
	n := pick("streams.num.standby.replicas", "", "group.streams.max.standby.replicas", int64(standby))
	return time.Duration(s) * time.Millisecond, time.Duration(h) * time.Millisecond, int32(max(n, 0))
}

// GroupConsumerTimeouts are the session timeout and heartbeat interval a
// consumer group runs with (GroupConfig.evaluate): its overrides, capped to
// the broker's current group.consumer.min/max bounds, else the broker's
// group.consumer.session.timeout.ms and group.consumer.heartbeat.interval.ms
// (session and heartbeat here).
func (b *Layers) GroupConsumerTimeouts(overrides map[string]string, session, heartbeat time.Duration) (time.Duration, time.Duration) {
	pick := func(key, minKey, maxKey string, def time.Duration) time.Duration {
		v, ok := overrides[key]
		if !ok {
			return def
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return def
		}
		n = max(min(n, b.brokerInt(maxKey)), b.brokerInt(minKey))
		return time.Duration(n) * time.Millisecond
	}
	return pick("consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms", session),
		pick("consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", heartbeat)
}

// ShareResetDuration returns the duration of a share.auto.offset.reset of
// the form by_duration:<ISO-8601 duration>, and whether value has that form
// (validShareAutoOffsetReset has accepted it).
func ShareResetDuration(value string) (time.Duration, bool) {
	d, ok := strings.CutPrefix(value, "by_duration:")
	if !ok {
		return 0, false
	}
	m := javaDuration.FindStringSubmatch(d)
	if m == nil || m[2] == "" && (m[3] == "" || m[3] == "T") || durationNegative(m) {
		return 0, false
	}
	return time.Duration(javaDurationSeconds(m) * float64(time.Second)), true
}

// TelemetryMaxBytes is telemetry.max.bytes (read-only: its static value,
// else Kafka's default), the bound of a client's PushTelemetry payload.
func (b *Layers) TelemetryMaxBytes() int32 {
	n := b.brokerInt("telemetry.max.bytes")
	if n <= 0 || n > math.MaxInt32 {
		return 1048576
	}
	return int32(n)
}
