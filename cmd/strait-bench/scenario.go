package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Scenario is one workload: a topic of Partitions partitions, Producers
// clients producing RecordSize-byte values with Acks and Compression as fast
// as they can for Duration, then one consumer reading it all back, then the
// same producers at a fixed LatencyRate with a consumer alongside measuring
// end-to-end latency for LatencyDuration.
//
// A scenario file holds one scenario object, a list of them, or
// {"defaults": {...}, "matrix": {"record_size": [100, 1024], ...}}, which
// expands to the cross product of the listed values over the defaults.
type Scenario struct {
	Name        string `json:"name"`
	RecordSize  int    `json:"record_size"`
	Partitions  int    `json:"partitions"`
	Acks        string `json:"acks"`        // "1" or "all"
	Compression string `json:"compression"` // none, gzip, snappy, lz4, zstd
	Producers   int    `json:"producers"`
	// Partitioner: "sticky" (franz-go's default for records without a key:
	// one partition per batch, as the Java client does since KIP-794),
	// "round-robin" (every record to the next partition, so each request
	// carries a batch for every partition) or "sticky-in-turn" (16 KiB to
	// one partition, then the next in order: inturn.Partitioner).
	Partitioner string `json:"partitioner"`
	LingerMs    int    `json:"linger_ms"`       // producer linger (Java's default since 4.0: 5)
	BatchBytes  int    `json:"batch_max_bytes"` // 0: franz-go's default (1 MB)
	Duration    Dur    `json:"duration"`        // produce-as-fast-as-possible phase
	MaxRecords  int64  `json:"max_records"`     // stop the produce phase earlier (0: no limit)
	// MinRecords keeps the produce phase going past Duration until so many
	// records are issued, over all producers (at most minRecordsStretch
	// times Duration): the scaling steps' sticky load, to reach every
	// partition.
	MinRecords int64 `json:"-"`
	// LatencyRate is the total records/s of the latency phase; 0 means half of
	// the reference broker's produce throughput in the same round (compare),
	// or half of the measured throughput (run). Negative skips the phase.
	LatencyRate     float64 `json:"latency_rate"`
	LatencyDuration Dur     `json:"latency_duration"`
	// LatencyLingerMs is the producers' linger in the latency phase: short,
	// so the figure is mostly the broker's, but not 0, which would send a
	// request per record and cap the rate far below the produce phase's.
	LatencyLingerMs int `json:"latency_linger_ms"`
	// Security is the listener the scenario's clients use: PLAINTEXT (the
	// default), SSL, SASL_PLAINTEXT or SASL_SSL. compare opens such a
	// listener beside the PLAINTEXT one on the same broker (kfake, which
	// has no TLS or SASL, sits these out: n/a in the report).
	Security string `json:"security,omitempty"`
	// SASLMechanism is the SASL_* scenarios' mechanism: SCRAM-SHA-512 (the
	// default), SCRAM-SHA-256 or PLAIN.
	SASLMechanism string `json:"sasl_mechanism,omitempty"`
	// Topic, when set, is used (and created only if missing) instead of a
	// fresh topic per run, e.g. to measure a topic that has settled.
	Topic string `json:"topic,omitempty"`
	// Topics, when more than one, spreads the produce phase's records over
	// these topics in turn (the scaling phase's steps of many topics).
	Topics []string `json:"-"`
}

// Dur is a time.Duration written as "3s" in JSON.
type Dur time.Duration

// UnmarshalJSON accepts "1.5s" style strings or a number of seconds.
func (d *Dur) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		*d = Dur(v)
		return err
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("duration: want \"3s\" or seconds, got %s", b)
	}
	*d = Dur(secs * float64(time.Second))
	return nil
}

// MarshalJSON writes the duration as "3s".
func (d Dur) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// D is the duration as a time.Duration.
func (d Dur) D() time.Duration { return time.Duration(d) }

// defaultScenario is what a scenario file's missing fields take.
func defaultScenario() Scenario {
	return Scenario{
		RecordSize:      1024,
		Partitions:      6,
		Acks:            "all",
		Compression:     "none",
		Producers:       1,
		Partitioner:     "sticky",
		LingerMs:        5,
		Duration:        Dur(2 * time.Second),
		LatencyDuration: Dur(2 * time.Second),
		LatencyLingerMs: 1,
	}
}

// autoName names a scenario by its parameters: "1KB p6 acks=all none 1prod".
func (s Scenario) autoName() string {
	size := fmt.Sprintf("%dB", s.RecordSize)
	if s.RecordSize%1024 == 0 {
		size = fmt.Sprintf("%dKB", s.RecordSize/1024)
	}
	name := fmt.Sprintf("%s p%d acks=%s %s %dprod", size, s.Partitions, s.Acks, s.Compression, s.Producers)
	if s.Partitioner != "sticky" {
		name += " " + s.Partitioner
	}
	if p := s.protocol(); p != protoPlaintext {
		name += " " + p
		if usesSASL(p) {
			name += "/" + s.mechanism()
		}
	}
	return name
}

// protocol is the scenario's security protocol, PLAINTEXT when unset.
func (s Scenario) protocol() string {
	if s.Security == "" {
		return protoPlaintext
	}
	return s.Security
}

// mechanism is the SASL mechanism of a SASL_* scenario ("" otherwise).
func (s Scenario) mechanism() string {
	switch {
	case !usesSASL(s.protocol()):
		return ""
	case s.SASLMechanism == "":
		return mechScram512
	}
	return s.SASLMechanism
}

// secured reports whether the scenario needs a listener other than PLAINTEXT.
func (s Scenario) secured() bool { return s.protocol() != protoPlaintext }

// twinKey is the scenario with its name, topic and security cleared: a
// secured scenario and the plaintext one with the same key are twins,
// whose ratio is the cost of the security.
func (s Scenario) twinKey() Scenario {
	s.Name, s.Topic, s.Topics, s.Security, s.SASLMechanism = "", "", nil, "", ""
	return s
}

func (s Scenario) validate() error {
	switch {
	case s.RecordSize < 16:
		return fmt.Errorf("%s: record_size %d: at least 16 (the latency phase stamps 16 bytes)", s.Name, s.RecordSize)
	case s.Partitions < 1:
		return fmt.Errorf("%s: partitions %d", s.Name, s.Partitions)
	case s.Producers < 1:
		return fmt.Errorf("%s: producers %d", s.Name, s.Producers)
	case s.Duration <= 0:
		return fmt.Errorf("%s: duration %v", s.Name, s.Duration.D())
	}
	if _, err := parseAcks(s.Acks); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	if _, err := parseCompression(s.Compression); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	if _, err := parsePartitioner(s.Partitioner); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	if !validProtocol(s.protocol()) {
		return fmt.Errorf("%s: security %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", s.Name, s.Security)
	}
	if s.SASLMechanism != "" && !usesSASL(s.protocol()) {
		return fmt.Errorf("%s: sasl_mechanism %q needs security SASL_SSL or SASL_PLAINTEXT", s.Name, s.SASLMechanism)
	}
	if m := s.mechanism(); m != "" && !validMechanism(m) {
		return fmt.Errorf("%s: sasl_mechanism %q: want SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN", s.Name, m)
	}
	return nil
}

// loadScenarios reads files and directories (every *.json in them, sorted)
// and returns the scenarios in order, scaled by durationScale (QUICK runs).
func loadScenarios(paths []string, durationScale float64) ([]Scenario, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		m, err := filepath.Glob(filepath.Join(p, "*.json"))
		if err != nil {
			return nil, err
		}
		sort.Strings(m)
		files = append(files, m...)
	}
	var out []Scenario
	for _, f := range files {
		ss, err := loadScenarioFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, ss...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scenarios in %s", strings.Join(paths, ", "))
	}
	for i := range out {
		if durationScale > 0 && durationScale != 1 {
			out[i].Duration = Dur(float64(out[i].Duration) * durationScale)
			out[i].LatencyDuration = Dur(float64(out[i].LatencyDuration) * durationScale)
		}
		if err := out[i].validate(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func loadScenarioFile(path string) ([]Scenario, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	trimmed := strings.TrimSpace(string(raw))
	if strings.HasPrefix(trimmed, "[") {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		var out []Scenario
		for _, item := range list {
			s, err := decodeScenario(item, defaultScenario())
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	var probe struct {
		Defaults json.RawMessage            `json:"defaults"`
		Matrix   map[string]json.RawMessage `json:"matrix"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, err
	}
	if probe.Matrix == nil {
		s, err := decodeScenario(raw, defaultScenario())
		if err != nil {
			return nil, err
		}
		return []Scenario{s}, nil
	}
	base := defaultScenario()
	if probe.Defaults != nil {
		if base, err = decodeScenario(probe.Defaults, base); err != nil {
			return nil, err
		}
		base.Name = ""
	}
	return expandMatrix(base, probe.Matrix)
}

// decodeScenario fills base with the fields present in raw.
func decodeScenario(raw []byte, base Scenario) (Scenario, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&base); err != nil {
		return base, err
	}
	if base.Name == "" {
		base.Name = base.autoName()
	}
	return base, nil
}

// expandMatrix returns the cross product of the matrix's value lists over
// base, the keys taken in sorted order so the scenario order is stable.
func expandMatrix(base Scenario, matrix map[string]json.RawMessage) ([]Scenario, error) {
	keys := make([]string, 0, len(matrix))
	for k := range matrix {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	partial := []map[string]json.RawMessage{{}}
	for _, k := range keys {
		var values []json.RawMessage
		if err := json.Unmarshal(matrix[k], &values); err != nil {
			return nil, fmt.Errorf("matrix %s: want a list: %w", k, err)
		}
		var next []map[string]json.RawMessage
		for _, p := range partial {
			for _, v := range values {
				m := make(map[string]json.RawMessage, len(p)+1)
				for pk, pv := range p {
					m[pk] = pv
				}
				m[k] = v
				next = append(next, m)
			}
		}
		partial = next
	}
	out := make([]Scenario, 0, len(partial))
	for _, p := range partial {
		raw, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		s, err := decodeScenario(raw, base)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
