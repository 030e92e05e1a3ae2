package config

// The configuration catalog behind DescribeConfigs, AlterConfigs and
// IncrementalAlterConfigs: Kafka's broker and topic keys (catalog.go,
// generated from Kafka's own ConfigDefs) and how a value, its source and its
// synonyms are resolved from the four layers Kafka has. For a broker:
//
//	DYNAMIC_BROKER_CONFIG           this broker's dynamic configs (etcd)
//	DYNAMIC_DEFAULT_BROKER_CONFIG   the cluster-wide dynamic default (etcd)
//	STATIC_BROKER_CONFIG            server.properties, KAFKA_* and --override
//	DEFAULT_CONFIG                  Kafka's default (Strait's where they differ)
//
// and a topic puts its own overrides (DYNAMIC_TOPIC_CONFIG) on top of the
// broker key it falls back to (ServerTopicConfigSynonyms: retention.ms ->
// log.retention.ms, max.message.bytes -> message.max.bytes, ...).

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// dynamicMode is how a broker key may be changed at runtime
// (DynamicBrokerConfig.dynamicConfigUpdateModes).
type dynamicMode uint8

const (
	readOnly    dynamicMode = iota // only in server.properties
	perBroker                      // per broker only (listeners, SSL, SASL)
	clusterWide                    // per broker or as the cluster default
)

// catalogKey is one key of Kafka's ConfigDef.
type catalogKey struct {
	name string
	typ  configType
	def  *string // the default as DescribeConfigs renders it; nil: none
	mode dynamicMode
	doc  string
}

// topicCatalogKey is a topic key with the broker key it falls back to ("" if
// none: the topic default is then Kafka's own).
type topicCatalogKey struct {
	catalogKey
	brokerSynonym string
}

func ptr(s string) *string { return &s }

var (
	brokerCatalogByName = func() map[string]*catalogKey {
		m := make(map[string]*catalogKey, len(brokerCatalog))
		for i := range brokerCatalog {
			m[brokerCatalog[i].name] = &brokerCatalog[i]
		}
		return m
	}()
	topicCatalogByName = func() map[string]*topicCatalogKey {
		m := make(map[string]*topicCatalogKey, len(topicCatalog))
		for i := range topicCatalog {
			m[topicCatalog[i].name] = &topicCatalog[i]
		}
		return m
	}()
)

// listenerConfigName splits listener.name.<listener>.<config> (Kafka's
// ListenerConfigRegex) and returns <config>.
func listenerConfigName(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return "", false
	}
	_, base, ok := strings.Cut(rest, ".")
	return base, ok && base != ""
}

// listenerMechanismConfigs are the listener configs given as
// listener.name.<listener>.<mechanism>.<config>.
var listenerMechanismConfigs = []string{"sasl.jaas.config", "sasl.login.callback.handler.class",
	"sasl.login.class", "sasl.server.callback.handler.class", "connections.max.reauth.ms"}

// brokerConfigSynonyms is DynamicBrokerConfig.brokerConfigSynonyms with
// matchListenerOverride: the keys that set the same thing, highest
// precedence first.
func brokerConfigSynonyms(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	if base, ok := listenerConfigName(name); ok {
		for _, m := range listenerMechanismConfigs {
			if strings.HasSuffix(base, m) {
				return []string{name, m}
			}
		}
		return []string{name, base}
	}
	return []string{name}
}

// brokerKeyType is KafkaConfig.configType: the key's type, a listener
// override's base key's type, or false for a key Kafka does not know.
func brokerKeyType(name string) (configType, bool) {
	if k := brokerCatalogByName[name]; k != nil {
		return k.typ, true
	}
	if t, ok := straitKeys[name]; ok {
		return t, true
	}
	if throttleRateKeys[name] {
		// KafkaConfig.configTypeExact also looks in DynamicConfig.Broker.
		return typeLong, true
	}
	if base, ok := listenerConfigName(name); ok {
		if k := brokerCatalogByName[base]; k != nil {
			return k.typ, true
		}
		for _, m := range listenerMechanismConfigs {
			if strings.HasSuffix(base, m) {
				return brokerCatalogByName[m].typ, true
			}
		}
	}
	return 0, false
}

// isSensitive is KafkaConfig.maybeSensitive: passwords, and keys of unknown
// type (which might be anything).
func isSensitive(t configType, known bool) bool { return !known || t == typePassword }

// wireConfigType is the DescribeConfigs config_type of t.
func wireConfigType(t configType, known bool) kmsg.ConfigType {
	if !known {
		return kmsg.ConfigTypeUnknown
	}
	return [...]kmsg.ConfigType{kmsg.ConfigTypeString, kmsg.ConfigTypeBoolean, kmsg.ConfigTypeInt,
		kmsg.ConfigTypeShort, kmsg.ConfigTypeLong, kmsg.ConfigTypeDouble, kmsg.ConfigTypeList,
		kmsg.ConfigTypeClass, kmsg.ConfigTypePassword}[t]
}

// renderValue is ConfigDef.convertToString(ConfigDef.parseType(raw)): how
// Kafka shows a value it has parsed (trimmed, numbers canonical, lists joined
// with bare commas). A value that does not parse is shown as given.
func renderValue(raw string, t configType) string {
	s := strings.TrimSpace(raw)
	switch t {
	case typeBoolean:
		if strings.EqualFold(s, "true") || strings.EqualFold(s, "false") {
			return strings.ToLower(s)
		}
	case typeInt, typeShort, typeLong:
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
	case typeDouble:
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return javaDouble(f)
		}
	case typeList:
		return strings.Join(parseList(s), ",")
	case typePassword:
		return raw
	}
	return s
}

// javaDouble formats f as Java's Double.toString does: at least one digit
// after the point, scientific notation below 1e-3 and from 1e7 on.
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	abs := math.Abs(f)
	if abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64) // e.g. 1.7976931348623157E+308
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	n, _ := strconv.Atoi(exp) // "+308", "-04": Java writes 308, -4
	return mant + "E" + strconv.Itoa(n)
}

// Layers is a broker's configuration in Kafka's four layers, highest
// precedence first. The maps are never modified once built: read them, do
// not write them.
type Layers struct {
	DynamicBroker  map[string]string // this broker's dynamic configs
	DynamicDefault map[string]string // the cluster-wide dynamic default
	Static         map[string]string // the properties the broker started with
	// defaults overrides the catalog's defaults where Strait's differ.
	defaults map[string]string
}

// NewLayers builds the layers of a broker started with cfg, adding the
// node.id / broker.id synonym as Kafka does (AbstractKafkaConfig.populateSynonyms).
func NewLayers(cfg Config, dynamicDefault, dynamicBroker map[string]string) *Layers {
	st := maps.Clone(cfg.Props)
	if st == nil {
		st = map[string]string{}
	}
	_, hasBroker := st["broker.id"]
	_, hasNode := st["node.id"]
	defaults := maps.Clone(straitDefaults)
	defaults["etcd.data.dir"] = cfg.Etcd.DataDir // <first log dir>/etcd
	switch {
	case hasNode && !hasBroker:
		st["broker.id"] = st["node.id"]
	case hasBroker && !hasNode:
		st["node.id"] = st["broker.id"]
	case !hasNode:
		defaults["broker.id"] = "1" // Kafka's -1 means "take node.id"
	}
	return &Layers{Static: st, DynamicDefault: dynamicDefault, DynamicBroker: dynamicBroker, defaults: defaults}
}

// defaultOf is a broker key's default value, nil if it has none.
func (b *Layers) defaultOf(name string) *string {
	if v, ok := b.defaults[name]; ok {
		return &v
	}
	if k := brokerCatalogByName[name]; k != nil {
		return k.def
	}
	return nil
}

// lookup returns the value of name in the highest layer that sets it.
func (b *Layers) lookup(name string) (string, kmsg.ConfigSource, bool) {
	if v, ok := b.DynamicBroker[name]; ok {
		return v, kmsg.ConfigSourceDynamicBrokerConfig, true
	}
	if v, ok := b.DynamicDefault[name]; ok {
		return v, kmsg.ConfigSourceDynamicDefaultBrokerConfig, true
	}
	if v, ok := b.Static[name]; ok {
		return v, kmsg.ConfigSourceStaticBrokerConfig, true
	}
	return "", 0, false
}

// value is a broker key's current value as KafkaConfig holds it: the highest
// layer that sets it, else its default (nil when it has none).
func (b *Layers) value(name string) *string {
	if v, _, ok := b.lookup(name); ok {
		return &v
	}
	return b.defaultOf(name)
}

// synonyms is ConfigHelper.configSynonyms: for each layer, highest first,
// the keys among names that it sets; then everything before the first entry
// for name is dropped (so a topic key whose broker synonym is set only
// through a lower-precedence spelling, like log.retention.hours for
// log.retention.ms, lists none, as in Kafka).
func (b *Layers) synonyms(name string, names []string, sensitive bool) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	var out []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	add := func(n string, v *string, src kmsg.ConfigSource) {
		s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		s.Name, s.Source = n, src
		if !sensitive {
			s.Value = v
		}
		out = append(out, s)
	}
	layers := []struct {
		m   map[string]string
		src kmsg.ConfigSource
	}{
		{b.DynamicBroker, kmsg.ConfigSourceDynamicBrokerConfig},
		{b.DynamicDefault, kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		{b.Static, kmsg.ConfigSourceStaticBrokerConfig},
	}
	for _, l := range layers {
		for _, n := range names {
			if v, ok := l.m[n]; ok {
				add(n, &v, l.src)
			}
		}
	}
	for _, n := range names {
		if d := b.defaultOf(n); d != nil {
			add(n, d, kmsg.ConfigSourceDefaultConfig)
		}
	}
	i := slices.IndexFunc(out, func(s kmsg.DescribeConfigsResponseResourceConfigConfigSynonym) bool { return s.Name == name })
	if i < 0 {
		return nil
	}
	return out[i:]
}

// BrokerEntry is one entry of a BROKER resource (ConfigHelper.createBrokerConfigEntry).
// perBrokerResource is false for the cluster default resource (name ""),
// whose entries list only the dynamic default layer.
func (b *Layers) BrokerEntry(name string, perBrokerResource, withSynonyms, withDocs bool) kmsg.DescribeConfigsResponseResourceConfig {
	typ, known := brokerKeyType(name)
	sensitive := isSensitive(typ, known)
	e := kmsg.NewDescribeConfigsResponseResourceConfig()
	e.Name = name
	syns := b.synonyms(name, brokerConfigSynonyms(name), sensitive)
	var value *string
	if perBrokerResource {
		value = b.value(name)
	} else {
		syns = slices.DeleteFunc(syns, func(s kmsg.DescribeConfigsResponseResourceConfigConfigSynonym) bool {
			return s.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig
		})
		if v, ok := b.DynamicDefault[name]; ok {
			value = &v
		}
	}
	if value != nil && known && !sensitive {
		v := renderValue(*value, typ)
		value = &v
	}
	setValueAndSource(&e, value, syns, sensitive, withSynonyms)
	k := brokerCatalogByName[name]
	e.ReadOnly = k == nil || k.mode == readOnly
	if base, ok := listenerConfigName(name); ok && k == nil {
		// A listener override is as dynamic as its base key.
		if bk := brokerCatalogByName[base]; bk != nil {
			e.ReadOnly = bk.mode == readOnly
		}
	}
	e.IsSensitive = sensitive
	e.ConfigType = wireConfigType(typ, known)
	if withDocs && k != nil {
		e.Documentation = ptr(k.doc)
	}
	return e
}

// setValueAndSource fills an entry's value (withheld when sensitive), its
// source (the first synonym's, else the default) and, when asked, its
// synonyms, most specific first.
func setValueAndSource(e *kmsg.DescribeConfigsResponseResourceConfig, value *string, syns []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym, sensitive, withSynonyms bool) {
	if !sensitive {
		e.Value = value
	}
	e.Source = kmsg.ConfigSourceDefaultConfig
	if len(syns) > 0 {
		e.Source = syns[0].Source
	}
	if withSynonyms {
		e.ConfigSynonyms = syns
	}
}

// BrokerEntryNames is every key a broker resource lists (ConfigHelper.allConfigs):
// the catalog's, Strait's own, and whatever else the layers set.
func (b *Layers) BrokerEntryNames() []string {
	names := make(map[string]struct{}, len(brokerCatalog)+len(b.Static))
	for _, k := range brokerCatalog {
		names[k.name] = struct{}{}
	}
	for n := range straitKeys {
		names[n] = struct{}{}
	}
	for _, m := range []map[string]string{b.Static, b.DynamicDefault, b.DynamicBroker} {
		for n := range m {
			names[n] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(names))
}

// topicDefault is the value a topic key takes without a topic override:
// the broker's (KafkaConfig.extractLogConfigMap), resolving the keys that
// have several broker spellings as KafkaConfig does, else Kafka's topic
// default.
func (b *Layers) topicDefault(k *topicCatalogKey) *string {
	num := func(name string) (int64, bool) {
		v := b.value(name)
		if v == nil {
			return 0, false
		}
		n, err := strconv.ParseInt(strings.TrimSpace(*v), 10, 64)
		return n, err == nil
	}
	firstOf := func(scaled ...struct {
		name  string
		scale int64
	}) *string {
		for _, s := range scaled {
			if n, ok := num(s.name); ok {
				return ptr(strconv.FormatInt(n*s.scale, 10))
			}
		}
		return k.def
	}
	type sc = struct {
		name  string
		scale int64
	}
	switch k.name {
	case "segment.ms":
		return firstOf(sc{"log.roll.ms", 1}, sc{"log.roll.hours", 3600000})
	case "segment.jitter.ms":
		return firstOf(sc{"log.roll.jitter.ms", 1}, sc{"log.roll.jitter.hours", 3600000})
	case "flush.ms":
		return firstOf(sc{"log.flush.interval.ms", 1}, sc{"log.flush.scheduler.interval.ms", 1})
	case "retention.ms":
		v := firstOf(sc{"log.retention.ms", 1}, sc{"log.retention.minutes", 60000}, sc{"log.retention.hours", 3600000})
		if n, err := strconv.ParseInt(*v, 10, 64); err == nil && n < 0 {
			return ptr("-1") // any negative broker retention means unlimited
		}
		return v
	}
	if k.brokerSynonym == "" {
		return k.def
	}
	if v := b.value(k.brokerSynonym); v != nil {
		return v
	}
	return k.def
}

// topicEntry is one entry of a TOPIC resource (ConfigHelper.createTopicConfigEntry).
func (b *Layers) topicEntry(k *topicCatalogKey, overrides map[string]string, withSynonyms, withDocs bool) kmsg.DescribeConfigsResponseResourceConfig {
	sensitive := isSensitive(k.typ, true)
	e := kmsg.NewDescribeConfigsResponseResourceConfig()
	e.Name = k.name
	value := b.topicDefault(k)
	override, overridden := overrides[k.name]
	if overridden {
		value = &override
	}
	if value != nil {
		value = ptr(renderValue(*value, k.typ))
	}
	var syns []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	if overridden {
		s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		s.Name, s.Source = k.name, kmsg.ConfigSourceDynamicTopicConfig
		if !sensitive {
			s.Value = value
		}
		syns = append(syns, s)
	}
	if k.brokerSynonym != "" {
		syns = append(syns, b.synonyms(k.brokerSynonym, brokerConfigSynonyms(k.brokerSynonym), sensitive)...)
	}
	setValueAndSource(&e, value, syns, sensitive, withSynonyms)
	e.IsSensitive = sensitive
	e.ConfigType = wireConfigType(k.typ, true)
	if withDocs {
		e.Documentation = ptr(k.doc)
	}
	return e
}

// TopicEntries are the entries of a TOPIC resource with the given overrides:
// every topic config Kafka knows, in the catalog's order.
func (b *Layers) TopicEntries(overrides map[string]string, withSynonyms, withDocs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(topicCatalog))
	for i := range topicCatalog {
		out = append(out, b.topicEntry(&topicCatalog[i], overrides, withSynonyms, withDocs))
	}
	return out
}

// IsTopicKey reports whether name is a topic config Kafka knows.
func IsTopicKey(name string) bool { return topicCatalogByName[name] != nil }
