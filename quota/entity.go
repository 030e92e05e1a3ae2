// Package quota owns client quotas as Apache Kafka 4 applies them: the
// entities a quota is set on (user, client-id, ip, and their defaults), the
// validation of AlterClientQuotas and the filters of DescribeClientQuotas
// (Kafka's ClientQuotaControlManager and ClientQuotasImage), and the rate
// windows and throttle times of ClientQuotaManager (manager.go, rate.go);
// and the replication throttles' rates (ReplicationQuotaManager,
// replication.go), which package replication checks. It imports nothing of the broker: the controller stores the quotas in etcd
// and hands each broker a Snapshot; the broker records what clients send and
// receive and mutes a connection for the throttle time this package returns.
package quota

import (
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The quota keys (Kafka's QuotaConfig).
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
	ConnectionCreationRate = "connection_creation_rate"
)

// The entity types (Kafka's ClientQuotaEntity).
const (
	TypeUser     = "user"
	TypeClientID = "client-id"
	TypeIP       = "ip"
)

type valueType int

const (
	typeLong valueType = iota
	typeDouble
	typeInt
)

// userClientKeys and ipKeys are the keys each kind of entity accepts, with
// their ConfigDef type.
var (
	userClientKeys = map[string]valueType{
		ProducerByteRate:       typeLong,
		ConsumerByteRate:       typeLong,
		RequestPercentage:      typeDouble,
		ControllerMutationRate: typeDouble,
	}
	ipKeys = map[string]valueType{ConnectionCreationRate: typeInt}
)

// Name is one component of an entity: absent (the zero Name), the default
// (a null name on the wire), or a name.
type Name struct {
	Present bool
	Default bool
	Value   string
}

// Named is the component named s.
func Named(s string) Name { return Name{Present: true, Value: s} }

// DefaultName is the default component (<default> in kafka-configs).
func DefaultName() Name { return Name{Present: true, Default: true} }

// Ptr is the name as the wire carries it: nil for the default.
func (n Name) Ptr() *string {
	if n.Default {
		return nil
	}
	v := n.Value
	return &v
}

func nameOf(p *string) Name {
	if p == nil {
		return DefaultName()
	}
	return Named(*p)
}

// Entity is what a quota is set on: a user, a client id, both, or an IP.
type Entity struct {
	User, ClientID, IP Name
}

// Part is one (type, name) pair of an entity, as the requests carry them.
type Part struct {
	Type string
	Name *string // nil: the default
}

// Parts lists the entity's components in a fixed order (user, client-id, ip).
func (e Entity) Parts() []Part {
	var out []Part
	if e.User.Present {
		out = append(out, Part{TypeUser, e.User.Ptr()})
	}
	if e.ClientID.Present {
		out = append(out, Part{TypeClientID, e.ClientID.Ptr()})
	}
	if e.IP.Present {
		out = append(out, Part{TypeIP, e.IP.Ptr()})
	}
	return out
}

func (e Entity) size() int { return len(e.Parts()) }

func (e Entity) get(typ string) Name {
	switch typ {
	case TypeUser:
		return e.User
	case TypeClientID:
		return e.ClientID
	case TypeIP:
		return e.IP
	}
	return Name{}
}

// String is Kafka's ClientQuotaEntity.toString: ClientQuotaEntity(entries={...})
// in the order of Java's HashMap for these keys.
func (e Entity) String() string {
	var parts []string
	add := func(t string, n Name) {
		if !n.Present {
			return
		}
		v := "null"
		if !n.Default {
			v = n.Value
		}
		parts = append(parts, t+"="+v)
	}
	// A HashMap of these three keys iterates ip, client-id, user
	// (by their hash codes' low bits).
	add(TypeIP, e.IP)
	add(TypeClientID, e.ClientID)
	add(TypeUser, e.User)
	return "ClientQuotaEntity(entries={" + strings.Join(parts, ", ") + "})"
}

// Error is a request-level or entity-level failure with Kafka's code and message.
type Error struct {
	Code    int16
	Message string
}

func (e *Error) Error() string { return e.Message }

func invalid(format string, args ...any) *Error {
	return &Error{Code: kerr.InvalidRequest.Code, Message: fmt.Sprintf(format, args...)}
}

// Values are one entity's quotas by key.
type Values map[string]float64

// Snapshot is an immutable view of every quota set. The zero value and nil
// hold none.
type Snapshot struct {
	entities map[Entity]Values
	keys     map[string]bool    // the keys set on some entity
	ipRates  map[string]float64 // connection_creation_rate by normalized IP
}

// NewSnapshot takes ownership of m.
func NewSnapshot(m map[Entity]Values) *Snapshot {
	s := &Snapshot{entities: m, keys: map[string]bool{}, ipRates: map[string]float64{}}
	for e, v := range m {
		for k := range v {
			s.keys[k] = true
		}
		if r, ok := v[ConnectionCreationRate]; ok && e.IP.Present && !e.IP.Default {
			s.ipRates[normalizeIP(e.IP.Value)] = r
		}
	}
	return s
}

// normalizeIP is an address as Go prints it, so that ::0001 and ::1 are
// one IP (Kafka compares InetAddresses).
func normalizeIP(s string) string {
	if ip := net.ParseIP(s); ip != nil {
		return ip.String()
	}
	return s
}

// ConnectionRate is the connection_creation_rate quota of ip: its own, else
// the default IP's (Kafka's connectionRateForIp).
func (s *Snapshot) ConnectionRate(ip string) (float64, bool) {
	if !s.Has(ConnectionCreationRate) {
		return 0, false
	}
	if r, ok := s.ipRates[normalizeIP(ip)]; ok {
		return r, true
	}
	r, ok := s.entities[Entity{IP: DefaultName()}][ConnectionCreationRate]
	return r, ok
}

// Get is the quotas of exactly e (nil when none).
func (s *Snapshot) Get(e Entity) Values {
	if s == nil {
		return nil
	}
	return s.entities[e]
}

// Has reports whether key is set on any entity.
func (s *Snapshot) Has(key string) bool { return s != nil && s.keys[key] }

// Len is the number of entities with quotas.
func (s *Snapshot) Len() int {
	if s == nil {
		return 0
	}
	return len(s.entities)
}

// Entry is one entity and its quotas in a DescribeClientQuotas answer.
type Entry struct {
	Entity Entity
	Values Values
}

// Match types of DescribeClientQuotas's components.
const (
	MatchExact     int8 = 0
	MatchDefault   int8 = 1
	MatchSpecified int8 = 2
)

// Component is one DescribeClientQuotas filter component.
type Component struct {
	EntityType string
	MatchType  int8
	Match      *string
}

// Describe answers a DescribeClientQuotas filter as Kafka's
// ClientQuotasImage.describe: INVALID_REQUEST or UNSUPPORTED_VERSION for a
// filter it refuses, else the matching entities (sorted, for a stable answer).
func (s *Snapshot) Describe(components []Component, strict bool) ([]Entry, *Error) {
	exact := map[string]Name{}
	typed := map[string]bool{}
	for _, c := range components {
		if c.EntityType == "" {
			return nil, invalid("Invalid empty entity type.")
		}
		if _, ok := exact[c.EntityType]; ok || typed[c.EntityType] {
			return nil, invalid("Entity type %s cannot appear more than once in the filter.", c.EntityType)
		}
		if c.EntityType != TypeIP && c.EntityType != TypeUser && c.EntityType != TypeClientID {
			return nil, &Error{Code: kerr.UnsupportedVersion.Code, Message: "Unsupported entity type " + c.EntityType}
		}
		switch c.MatchType {
		case MatchExact:
			if c.Match == nil {
				return nil, invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			exact[c.EntityType] = Named(*c.Match)
		case MatchDefault:
			if c.Match != nil {
				return nil, invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			exact[c.EntityType] = DefaultName()
		case MatchSpecified:
			if c.Match != nil {
				return nil, invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			typed[c.EntityType] = true
		default:
			return nil, invalid("Unknown match type %d", c.MatchType)
		}
	}
	has := func(t string) bool { _, ok := exact[t]; return ok || typed[t] }
	if has(TypeIP) && (has(TypeUser) || has(TypeClientID)) {
		return nil, invalid("Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	var out []Entry
	if s == nil {
		return out, nil
	}
	for e, v := range s.entities {
		if strict && e.size() != len(exact)+len(typed) {
			continue
		}
		ok := true
		for t, n := range exact {
			if e.get(t) != n {
				ok = false
				break
			}
		}
		for t := range typed {
			if !e.get(t).Present {
				ok = false
			}
		}
		if ok {
			out = append(out, Entry{Entity: e, Values: maps.Clone(v)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entity.sortKey() < out[j].Entity.sortKey() })
	return out, nil
}

func (e Entity) sortKey() string {
	var b strings.Builder
	for _, n := range []Name{e.User, e.ClientID, e.IP} {
		switch {
		case !n.Present:
			b.WriteString("0")
		case n.Default:
			b.WriteString("1")
		default:
			b.WriteString("2" + n.Value)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// Op is one operation of an alteration: set key to Value, or remove it.
type Op struct {
	Key    string
	Value  float64
	Remove bool
}

// Alteration is one entry of an AlterClientQuotas request.
type Alteration struct {
	Parts []Part
	Ops   []Op
}

// Result is one entity's outcome of an alteration.
type Result struct {
	Parts []Part // as the request named it
	Err   *Error
}

// Change is one entity's new quotas (Values empty: the entity has none left).
type Change struct {
	Entity Entity
	Values Values
}

// Plan judges alterations against current (a function returning an
// entity's quotas now) as Kafka's ClientQuotaControlManager.alterClientQuotas
// does: one result per entry, and the entities whose quotas change.
func Plan(alts []Alteration, current func(Entity) Values) ([]Result, []Change) {
	results := make([]Result, 0, len(alts))
	changed := map[Entity]Values{}
	var order []Entity
	seen := map[string]int{} // the entity's string -> its result's index
	for _, a := range alts {
		// Kafka builds a map of the request's (type, name) pairs: a type
		// named twice keeps its last name.
		m := map[string]*string{}
		var types []string
		for _, p := range a.Parts {
			if _, ok := m[p.Type]; !ok {
				types = append(types, p.Type)
			}
			m[p.Type] = p.Name
		}
		key := entityMapString(m, types)
		newValues := map[string]*float64{}
		var err *Error
		for _, op := range a.Ops {
			if _, dup := newValues[op.Key]; dup {
				err = invalid("Duplicate quota key %s not updating quota for this entity", op.Key)
				continue
			}
			if op.Remove {
				newValues[op.Key] = nil
			} else {
				v := op.Value
				newValues[op.Key] = &v
			}
		}
		if i, ok := seen[key]; ok || err != nil {
			// Kafka reports both a duplicate key and a repeated entity
			// as the latter, on the entity's (single) result.
			e := invalid("Ignoring duplicate entity %s", key)
			if ok {
				results[i].Err = e
			}
			if err != nil && !ok {
				seen[key] = len(results)
				results = append(results, Result{Parts: a.Parts, Err: e})
			}
			continue
		}
		seen[key] = len(results)
		ent, e := validateEntity(m, types)
		if e == nil {
			e = validateValues(ent, newValues)
		}
		results = append(results, Result{Parts: a.Parts, Err: e})
		if e != nil {
			continue
		}
		cur, ok := changed[ent]
		if !ok {
			cur = maps.Clone(current(ent))
			if cur == nil {
				cur = Values{}
			}
		}
		dirty := false
		for k, v := range newValues {
			old, had := cur[k]
			switch {
			case v == nil && had:
				delete(cur, k)
				dirty = true
			case v != nil && (!had || old != *v):
				cur[k] = *v
				dirty = true
			}
		}
		if dirty {
			if !ok {
				order = append(order, ent)
			}
			changed[ent] = cur
		}
	}
	changes := make([]Change, 0, len(order))
	for _, e := range order {
		changes = append(changes, Change{Entity: e, Values: changed[e]})
	}
	return results, changes
}

// entityMapString is Kafka's ClientQuotaEntity.toString of a request's map.
func entityMapString(m map[string]*string, types []string) string {
	order := slices.Clone(types)
	rank := func(t string) int {
		switch t {
		case TypeIP:
			return 0
		case TypeClientID:
			return 1
		case TypeUser:
			return 2
		}
		return 3
	}
	sort.SliceStable(order, func(i, j int) bool { return rank(order[i]) < rank(order[j]) })
	parts := make([]string, 0, len(order))
	for _, t := range order {
		v := "null"
		if m[t] != nil {
			v = *m[t]
		}
		parts = append(parts, t+"="+v)
	}
	return "ClientQuotaEntity(entries={" + strings.Join(parts, ", ") + "})"
}

func validateEntity(m map[string]*string, types []string) (Entity, *Error) {
	var e Entity
	if len(m) == 0 {
		return e, invalid("Invalid empty client quota entity")
	}
	for _, t := range types {
		n := m[t]
		switch t {
		case TypeUser:
			e.User = nameOf(n)
		case TypeClientID:
			e.ClientID = nameOf(n)
		case TypeIP:
			e.IP = nameOf(n)
		default:
			return e, invalid("Unhandled client quota entity type: %s", t)
		}
		if n != nil && *n == "" {
			return e, invalid("Empty %s not supported", t)
		}
	}
	return e, nil
}

// keysFor is Kafka's configKeysForEntityType.
func keysFor(e Entity) (map[string]valueType, *Error) {
	switch {
	case e.IP.Present:
		if e.User.Present || e.ClientID.Present {
			// Kafka's message lacks the space before "not".
			return nil, invalid("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
		}
		if !e.IP.Default && net.ParseIP(e.IP.Value) == nil {
			return nil, invalid("%s is not a valid IP or resolvable host.", e.IP.Value)
		}
		return ipKeys, nil
	case e.User.Present || e.ClientID.Present:
		return userClientKeys, nil
	}
	return nil, invalid("Invalid empty client quota entity")
}

func validateValues(e Entity, values map[string]*float64) *Error {
	keys, err := keysFor(e)
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		v := values[k]
		if v == nil {
			continue
		}
		if err := validateValue(keys, k, *v); err != nil {
			return err
		}
	}
	return nil
}

// validateValue is Kafka's validateQuotaKeyValue.
func validateValue(keys map[string]valueType, key string, v float64) *Error {
	t, ok := keys[key]
	if !ok {
		return invalid("Invalid configuration key %s", key)
	}
	if v <= 0 || math.IsNaN(v) {
		return invalid("Quota %s must be greater than 0", key)
	}
	switch t {
	case typeInt:
		if v > math.MaxInt32 {
			return invalid("Proposed value for %s is too large for an INT.", key)
		}
	case typeLong:
		if v > math.MaxInt64 {
			return invalid("Proposed value for %s is too large for a LONG.", key)
		}
	case typeDouble:
		return nil
	}
	if math.Abs(math.Mod(v, 1.0)) > 1e-6 {
		return invalid("%s cannot be a fractional value.", key)
	}
	return nil
}
