package reference

// The differential conformance harness: scripted request sequences
// (conformance_cases_test.go) covering every API key and version Strait
// serves, error paths included, are sent pinned to a version over a raw
// connection to Apache Kafka 4.4 and to Strait, one step to Kafka and then
// the same step to Strait. Each response is decoded with kmsg and flattened
// by reflection into path=value lines; the fields that legitimately differ
// are normalised by the one declared list below (normalised), and every
// other field must be equal. A divergence fails the test unless
// knownDivergences names its case and points at a DIFFERENCES.md entry.
// The report goes to compat-tests/reference/work/conformance.md.

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// conformanceSettings: both brokers, so that their answers do not depend on
// timing: no initial rebalance delay, no auto-created topics (that
// difference is DIFFERENCES.md's "Auto-created topics", compared by the
// authorization test).
// The keys bench/kafka/kafka.sh writes into Kafka's server.properties that
// DescribeConfigs is asked about are given to Strait too, so that both
// report them as static broker configs.
var conformanceSettings = map[string]string{
	"group.initial.rebalance.delay.ms": "0",
	"auto.create.topics.enable":        "false",
	"log.initial.task.delay.ms":        "0",
	"num.partitions":                   "1",
	"log.retention.hours":              "168",
	// Kafka's streams groups wait this long before their first
	// assignment; Strait assigns at once (DIFFERENCES.md).
	"group.streams.initial.rebalance.delay.ms": "0",
}

// How a normalised field is compared.
type normKind int

const (
	normDrop    normKind = iota // not compared at all
	normSet                     // compared as "<set>" when set (non-empty, non-zero, >= 0), else as is
	normMessage                 // "<set>" when a non-empty string, else "none" (null and "" mean the same)
)

// normalised is the ONE list of the fields that legitimately differ between
// two brokers, by field name or by "StructType.Field". Everything else is
// compared.
var normalised = map[string]struct {
	kind normKind
	why  string
}{
	"ThrottleMillis":              {normDrop, "throttle times depend on load"},
	"ClusterID":                   {normSet, "cluster ids are random per cluster"},
	"TopicID":                     {normSet, "topic ids are random per topic"},
	"MemberID":                    {normSet, "member ids are generated"},
	"Leader":                      {normSet, "node ids (Metadata) and member ids (JoinGroup) are assigned"},
	"LeaderID":                    {normSet, "node ids are assigned"},
	"NodeID":                      {normSet, "node ids are assigned"},
	"ControllerID":                {normSet, "node ids are assigned"},
	"BrokerID":                    {normSet, "node ids are assigned"},
	"CoordinatorID":               {normSet, "node ids are assigned"},
	"Replicas":                    {normSet, "node ids are assigned"},
	"ISR":                         {normSet, "node ids are assigned"},
	"Host":                        {normSet, "hosts differ"},
	"Port":                        {normSet, "ports differ"},
	"ProducerID":                  {normSet, "producer ids are assigned"},
	"Timestamp":                   {normSet, "timestamps"},
	"LogAppendTime":               {normSet, "timestamps"},
	"CommitTimestamp":             {normSet, "timestamps"},
	"LastTimestamp":               {normSet, "timestamps"},
	"TransactionStartTime":        {normSet, "timestamps"},
	"StartTimestamp":              {normSet, "timestamps"},
	"IssueTimestamp":              {normSet, "timestamps"},
	"ExpiryTimestamp":             {normSet, "timestamps"},
	"MaxTimestamp":                {normSet, "timestamps"},
	"LastFetchTimestamp":          {normSet, "timestamps"},
	"LastCaughtUpTimestamp":       {normSet, "timestamps"},
	"ApiVersionsResponse.ApiKeys": {normDrop, "the served keys and versions: issue 20's kversion test compares them"},
	"SupportedFeatures":           {normDrop, "feature ranges: DescribeFeatures is issue 20's own"},
	"FinalizedFeatures":           {normDrop, "feature levels: DescribeFeatures is issue 20's own"},
	"FinalizedFeaturesEpoch":      {normDrop, "the metadata offset of the features"},
	"Dir":                         {normSet, "log directory paths"},
	"TotalBytes":                  {normSet, "disk sizes"},
	"UsableBytes":                 {normSet, "disk sizes"},
	"ErrorMessage":                {normMessage, "Kafka's messages name Java classes; only whether there is one is compared (null and empty alike)"},
	"UnknownTags":                 {normDrop, "not in any schema"},
	"SessionID":                   {normSet, "fetch session ids are random"},
}

// A target is one broker reached over a raw connection, with the state the
// steps of a sequence keep (ids, member ids, producer epochs).
type target struct {
	label string
	addr  string
	conn  net.Conn
	rd    *bufio.Reader
	corr  int32
	vars  map[string]any
	i     int // the iteration of the sequence being run
}

var formatter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("strait-conformance"))

func (t *target) send(req kmsg.Request) (kmsg.Response, error) { return t.sendWith(formatter, req) }

// sendOneWay sends a request that has no answer (Produce with acks=0).
func (t *target) sendOneWay(f *kmsg.RequestFormatter, req kmsg.Request) error {
	if err := t.dial(); err != nil {
		return err
	}
	t.corr++
	t.conn.SetDeadline(time.Now().Add(15 * time.Second))
	_, err := t.conn.Write(f.AppendRequest(nil, req, t.corr))
	return err
}

func (t *target) dial() error {
	if t.conn == nil {
		c, err := net.DialTimeout("tcp", t.addr, 5*time.Second)
		if err != nil {
			return err
		}
		t.conn, t.rd = c, bufio.NewReader(c)
	}
	return nil
}

// sendWith sends req with f's client id and reads its answer.
func (t *target) sendWith(f *kmsg.RequestFormatter, req kmsg.Request) (kmsg.Response, error) {
	if err := t.dial(); err != nil {
		return nil, err
	}
	fail := func(err error) (kmsg.Response, error) {
		t.conn.Close()
		t.conn = nil
		return nil, err
	}
	t.corr++
	t.conn.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := t.conn.Write(f.AppendRequest(nil, req, t.corr)); err != nil {
		return fail(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(t.rd, size[:]); err != nil {
		return fail(fmt.Errorf("connection closed (%v)", err))
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		return fail(fmt.Errorf("bad response size %d", n))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(t.rd, body); err != nil {
		return fail(err)
	}
	if c := int32(binary.BigEndian.Uint32(body)); c != t.corr {
		return fail(fmt.Errorf("correlation id %d, want %d", c, t.corr))
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		if len(body) == 0 || body[0] != 0 {
			return fail(fmt.Errorf("response header tags not supported"))
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return fail(fmt.Errorf("decoding the response: %v", err))
	}
	return resp, nil
}

func (t *target) set(k string, v any) { t.vars[k] = v }
func (t *target) str(k string) string { s, _ := t.vars[k].(string); return s }
func (t *target) i32(k string) int32  { n, _ := t.vars[k].(int32); return n }
func (t *target) i64(k string) int64  { n, _ := t.vars[k].(int64); return n }
func (t *target) i16(k string) int16  { n, _ := t.vars[k].(int16); return n }
func (t *target) id(topic string) [16]byte {
	b, _ := t.vars["id:"+topic].([16]byte)
	return b
}

// name gives a resource of this iteration its own name.
func (t *target) name(base string) string { return fmt.Sprintf("%s-%d", base, t.i) }

// flatten lists a response as sorted path=value lines, list elements named
// by their topic, group, name or partition where they have one.
func flatten(v any) []string {
	var out []string
	flat(reflect.ValueOf(v), "", &out)
	sort.Strings(out)
	return out
}

func flat(v reflect.Value, path string, out *[]string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			*out = append(*out, path+"=null")
			return
		}
		flat(v.Elem(), path, out)
		return
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f, fv := t.Field(i), v.Field(i)
			if !f.IsExported() {
				continue
			}
			p := path + "." + f.Name
			n, ok := normalised[t.Name()+"."+f.Name]
			if !ok {
				n, ok = normalised[f.Name]
			}
			if ok && n.kind == normDrop {
				continue
			}
			if ok && n.kind == normMessage {
				m := "none"
				if s, _ := fv.Interface().(*string); s != nil && *s != "" {
					m = "<set>"
				}
				*out = append(*out, p+"="+m)
				continue
			}
			if ok && n.kind == normSet {
				*out = append(*out, p+"="+setValue(fv))
				continue
			}
			flat(fv, p, out)
		}
		return
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			*out = append(*out, path+"="+bytesValue(path, v.Bytes()))
			return
		}
		*out = append(*out, fmt.Sprintf("%s.len=%d", path, v.Len()))
		for j := 0; j < v.Len(); j++ {
			flat(v.Index(j), fmt.Sprintf("%s[%s]", path, elementKey(v.Index(j), j)), out)
		}
		return
	case reflect.Array:
		*out = append(*out, fmt.Sprintf("%s=%x", path, v.Interface()))
		return
	}
	*out = append(*out, fmt.Sprintf("%s=%v", path, v.Interface()))
}

// setValue: a normalised field as "<set>" when set, else its value (-1,
// empty, null, zero id), so that set-versus-unset is still compared.
func setValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return "null"
		}
		return setValue(v.Elem())
	case reflect.String:
		if v.String() == "" {
			return `""`
		}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Int() < 0 {
			return fmt.Sprint(v.Int())
		}
	case reflect.Array:
		if v.IsZero() {
			return "zero"
		}
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = setValue(v.Index(i))
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return "<set>"
}

// bytesValue: record batches by their headers and a digest of their
// records (the same bytes were produced to both); other bytes by digest.
func bytesValue(path string, b []byte) string {
	if b == nil {
		return "null"
	}
	if strings.HasSuffix(path, ".Records") || strings.HasSuffix(path, ".RecordBatches") {
		var parts []string
		for len(b) >= 61 {
			l := int(binary.BigEndian.Uint32(b[8:])) + 12
			if l > len(b) {
				parts = append(parts, fmt.Sprintf("partial batch of %d bytes", len(b)))
				break
			}
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b[:l]); err != nil {
				parts = append(parts, "undecodable batch")
				break
			}
			// The producer id is assigned (normalised); a control
			// batch's body holds the coordinator epoch, compared.
			pid := "-1"
			if rb.ProducerID >= 0 {
				pid = "<set>"
			}
			parts = append(parts, fmt.Sprintf("{offset %d last delta %d records %d attributes %#x producer %s epoch %d seq %d body %x}",
				rb.FirstOffset, rb.LastOffsetDelta, rb.NumRecords, rb.Attributes, pid, rb.ProducerEpoch, rb.FirstSequence, sha256.Sum256(rb.Records)))
			b = b[l:]
		}
		return strings.Join(parts, " ")
	}
	if len(b) <= 32 {
		return fmt.Sprintf("%x", b)
	}
	return fmt.Sprintf("%d bytes sha256 %x", len(b), sha256.Sum256(b))
}

// caseID names a (key, version, error path) case.
type caseID struct {
	key     int16
	version int16
	path    string
}

// divergence is one step whose answers differ.
type divergence struct {
	id      caseID
	request string
	diff    string
	known   string // the DIFFERENCES.md entry it is listed under, or ""
}

func describeRequest(r kmsg.Request) string {
	b, _ := json.Marshal(r)
	s := kmsg.NameForKey(r.Key()) + " " + string(b)
	if len(s) > 700 {
		s = s[:700] + "..."
	}
	return s
}

// transient: codes a just-started coordinator or a just-created partition
// answers for a moment; the step is sent again (at most 30 times).
func transient(lines []string) bool {
	for _, l := range lines {
		for _, e := range []*kerr.Error{kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.NotCoordinator,
			kerr.LeaderNotAvailable, kerr.NotLeaderForPartition} {
			if strings.HasSuffix(l, fmt.Sprintf("ErrorCode=%d", e.Code)) {
				return true
			}
		}
	}
	return false
}

func TestConformanceMatchesKafka(t *testing.T) {
	if os.Getenv("STRAIT_KAFKA_REFERENCE") != "1" {
		t.Skip("needs Java and Maven: run with STRAIT_KAFKA_REFERENCE=1 (make compat-reference)")
	}
	started := time.Now()
	settings := map[string]string{}
	for k, v := range brokerSettings {
		settings[k] = v
	}
	for k, v := range conformanceSettings {
		settings[k] = v
	}
	kb, sb := startKafkaWith(t, settings), startStraitWith(t, settings)
	targets := [2]*target{
		{label: "kafka", addr: kb.addr, vars: map[string]any{}},
		{label: "strait", addr: sb.addr, vars: map[string]any{}},
	}
	defer func() {
		for _, tg := range targets {
			if tg.conn != nil {
				tg.conn.Close()
			}
		}
	}()
	// The versions compared: those both brokers serve.
	var ranges [2]map[int16][2]int16
	for i, tg := range targets {
		ranges[i] = map[int16][2]int16{}
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "strait-conformance", "1"
		resp, err := tg.send(req)
		if err != nil {
			t.Fatalf("%s: ApiVersions: %v", tg.label, err)
		}
		for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
			ranges[i][k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
	}
	common := map[int16][2]int16{}
	for k, s := range ranges[1] {
		kr, ok := ranges[0][k]
		if !ok {
			if _, listed := straitOnlyKeys[k]; !listed {
				t.Errorf("Strait serves key %d (%s), Kafka 4.4 does not", k, kmsg.NameForKey(k))
			}
			continue
		}
		r := [2]int16{max(s[0], kr[0]), min(s[1], kr[1])}
		if k == int16(kmsg.Produce) {
			r[0] = max(r[0], 3) // both advertise 0 and refuse 0-2 (KAFKA-18659)
		}
		if r[0] <= r[1] {
			common[k] = r
		}
	}
	versionAt := func(key int16, i int) (int16, bool) {
		r, ok := common[key]
		if !ok {
			return 0, false
		}
		return min(r[0]+int16(i), r[1]), true
	}

	cases := map[caseID]bool{}
	keyCases := map[int16]map[int16]bool{}
	requests := 0
	var divs []divergence
	persistent := map[string]bool{}
	// STRAIT_CONFORMANCE_DUMP=text logs both answers of the steps whose
	// "scenario: path" contains text.
	dump := os.Getenv("STRAIT_CONFORMANCE_DUMP")
	for _, sc := range conformanceScenarios() {
		t.Logf("%s: %s", time.Since(started).Round(time.Millisecond), sc.name)
		// The iterations: enough for every version of every key the
		// sequence sends to be sent once.
		iters := 1
		for _, st := range sc.steps {
			probe := st.req(targets[0])
			if r, ok := common[probe.Key()]; ok && !sc.once {
				iters = max(iters, int(r[1]-r[0])+1)
			}
		}
		for i := 0; i < iters; i++ {
			for _, tg := range targets {
				tg.i = i
			}
			for _, st := range sc.steps {
				var reqs [2]kmsg.Request
				var lines [2][]string
				var resps [2]kmsg.Response
				skipped := false
				for j, tg := range targets {
					for try := 0; ; try++ {
						req := st.req(tg)
						v, ok := versionAt(req.Key(), i)
						if r := common[req.Key()]; st.version > 0 && ok {
							v = min(max(st.version, r[0]), r[1])
						}
						if !ok {
							skipped = true
							break
						}
						if st.minVersion > 0 && v < st.minVersion {
							skipped = true
							break
						}
						req.SetVersion(v)
						reqs[j] = req
						resp, err := tg.send(req)
						if err != nil {
							lines[j] = []string{"error: " + err.Error()}
							break
						}
						resps[j] = resp
						lines[j] = flatten(resp)
						// A step that stayed transient through its
						// retries once answers so for good (an error
						// path, not a coordinator still loading): not
						// retried again.
						pk := tg.label + "/" + sc.name + ": " + st.path
						if !transient(lines[j]) || persistent[pk] {
							break
						}
						if try == 25 && !sc.once || try == 150 { // setup: up to 30 s
							persistent[pk] = true
							break
						}
						time.Sleep(200 * time.Millisecond)
					}
					if skipped {
						break
					}
					if st.keep != nil && resps[j] != nil {
						st.keep(tg, resps[j])
					}
				}
				if skipped {
					continue
				}
				requests += 2
				id := caseID{reqs[0].Key(), reqs[0].GetVersion(), sc.name + ": " + st.path}
				cases[id] = true
				if keyCases[id.key] == nil {
					keyCases[id.key] = map[int16]bool{}
				}
				keyCases[id.key][id.version] = true
				// Kafka applies admin changes (quotas, SCRAM
				// credentials) through its metadata log a moment
				// after answering them: a step reading them asks
				// Kafka again, at most 20 times 100 ms apart.
				for try := 0; st.eventually && try < 20 && !reflect.DeepEqual(lines[0], lines[1]); try++ {
					time.Sleep(100 * time.Millisecond)
					req := st.req(targets[0])
					req.SetVersion(reqs[0].GetVersion())
					if resp, err := targets[0].send(req); err == nil {
						lines[0] = flatten(resp)
					}
				}
				if dump != "" && strings.Contains(sc.name+": "+st.path, dump) {
					t.Logf("%s v%d %s:\nkafka:  %v\nstrait: %v", kmsg.NameForKey(reqs[0].Key()), reqs[0].GetVersion(), sc.name+": "+st.path, lines[0], lines[1])
				}
				if reflect.DeepEqual(lines[0], lines[1]) {
					continue
				}
				d := divergence{id: id, request: describeRequest(reqs[1]), diff: diffLines(lines[0], lines[1])}
				if k, ok := knownDivergences[sc.name+": "+st.path]; ok && k.allows(d.diff) {
					d.known = k.entry
				}
				divs = append(divs, d)
			}
		}
	}

	// The recorded sessions, after the scripted ones so that those run on
	// fresh brokers as they were written to (conformance_replay_test.go).
	t.Logf("%s: recorded traffic", time.Since(started).Round(time.Millisecond))
	replayed, replayDivs := replayRecordings(t, [2]string{kb.addr, sb.addr}, common, dump)
	divs = append(divs, replayDivs...)

	// Every version of every key both serve must have been sent.
	var uncovered []string
	for k, r := range common {
		for v := r[0]; v <= r[1]; v++ {
			if !keyCases[k][v] {
				uncovered = append(uncovered, fmt.Sprintf("%s v%d", kmsg.NameForKey(k), v))
			}
		}
	}
	sort.Strings(uncovered)
	notes, _ := os.ReadFile("../DIFFERENCES.md")
	for k, entry := range straitOnlyKeys {
		if !strings.Contains(string(notes), entry) {
			t.Errorf("straitOnlyKeys: key %d points at %q, which DIFFERENCES.md does not contain", k, entry)
		}
	}
	var unknown []divergence
	for _, d := range divs {
		if d.known == "" {
			unknown = append(unknown, d)
		} else if !strings.Contains(string(notes), d.known) {
			t.Errorf("knownDivergences points at %q, which DIFFERENCES.md does not contain", d.known)
		}
	}
	report := writeConformanceReport(t, common, keyCases, cases, requests, divs, uncovered, replayed, time.Since(started))
	t.Logf("%d requests, %d distinct (key, version, path) cases over %d keys; %d recorded requests replayed, covering %d (key, version) cases; %d divergences (%d listed in DIFFERENCES.md); report: %s",
		requests, len(cases), len(keyCases), replayed.requests, len(replayed.cases), len(divs), len(divs)-len(unknown), report)
	if len(uncovered) > 0 {
		t.Errorf("versions both brokers serve that no step sent: %s", strings.Join(uncovered, ", "))
	}
	for _, d := range unknown {
		t.Errorf("divergence not in DIFFERENCES.md: %s v%d (%s)\nrequest: %s\n%s", kmsg.NameForKey(d.id.key), d.id.version, d.id.path, d.request, d.diff)
	}
}

func writeConformanceReport(t *testing.T, common map[int16][2]int16, keyCases map[int16]map[int16]bool, cases map[caseID]bool,
	requests int, divs []divergence, uncovered []string, replayed replayResult, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Differential conformance: Strait against Apache Kafka 4.4\n\n")
	fmt.Fprintf(&b, "Written by TestConformanceMatchesKafka (compat-tests/reference, `make compat-reference`); do not edit.\n\n")
	known := 0
	for _, d := range divs {
		if d.known != "" {
			known++
		}
	}
	fmt.Fprintf(&b, "%d requests sent to each broker (%d compared pairs), %d distinct (key, version, error path) cases over %d API keys and %d versions; "+
		"%d divergences, %d of them listed in DIFFERENCES.md, %d not. Took %s.\n\n",
		requests/2, requests/2, len(cases), len(keyCases), countVersions(keyCases), len(divs), known, len(divs)-known, took.Round(time.Second))
	fmt.Fprintf(&b, "Normalised fields (the one declared list, conformance_test.go `normalised`):\n\n")
	var names []string
	for n := range normalised {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		how := map[normKind]string{normDrop: "dropped", normSet: "set or not", normMessage: "a message or none"}[normalised[n].kind]
		fmt.Fprintf(&b, "- %s (%s): %s\n", n, how, normalised[n].why)
	}
	fmt.Fprintf(&b, "\n## Keys and versions\n\n| key | versions both serve | cases |\n|---|---|---|\n")
	var keys []int
	for k := range common {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	for _, k := range keys {
		n := 0
		for c := range cases {
			if c.key == int16(k) {
				n++
			}
		}
		fmt.Fprintf(&b, "| %d %s | %d-%d | %d |\n", k, kmsg.NameForKey(int16(k)), common[int16(k)][0], common[int16(k)][1], n)
	}
	if len(uncovered) > 0 {
		fmt.Fprintf(&b, "\nNot sent: %s\n", strings.Join(uncovered, ", "))
	}
	writeReplayReport(&b, replayed)
	fmt.Fprintf(&b, "\n## Divergences\n\n")
	if len(divs) == 0 {
		fmt.Fprintf(&b, "None.\n")
	}
	for _, d := range divs {
		where := "NOT in DIFFERENCES.md"
		if d.known != "" {
			where = "DIFFERENCES.md: " + d.known
		}
		fmt.Fprintf(&b, "### %s v%d: %s (%s)\n\nrequest: `%s`\n\n```\n%s\n```\n\n", kmsg.NameForKey(d.id.key), d.id.version, d.id.path, where, d.request, d.diff)
	}
	dir := filepath.Join("work")
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, "conformance.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Errorf("writing the report: %v", err)
	}
	abs, _ := filepath.Abs(path)
	return abs
}

func countVersions(keyCases map[int16]map[int16]bool) int {
	n := 0
	for _, vs := range keyCases {
		n += len(vs)
	}
	return n
}
