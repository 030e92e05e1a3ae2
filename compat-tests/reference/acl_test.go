package reference

// The differential authorization test: Kafka 4.4 and Strait, both with the
// StandardAuthorizer and SASL/PLAIN users admin (super user), alice, bob and carol,
// get the same ACLs and then the same request for every API key both serve,
// as bob (denied: he may only describe one topic), carol (prefixed allows,
// literal denies) and alice (allowed). The error codes, the topics/groups/partitions listed and the
// authorized_operations of each response must be the same on both; what
// legitimately differs (node ids, topic ids, cluster ids, member ids, ports,
// timestamps, messages) is left out of the comparison. Last, carol's KIP-848
// regex subscription must be assigned the same topics on both (those she may
// describe).

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

const (
	aclTopic  = "acl-t"     // alice: ALL on the prefix acl-t; bob: DESCRIBE on it
	aclSecret = "secret"    // nobody but admin
	aclGroup  = "acl-g"     // alice: ALL
	aclTxn    = "acl-tx"    // alice: ALL
	aclNew    = "acl-t-new" // created and deleted by alice
)

var aclUsers = map[string]string{"admin": "admin-pw", "alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw"}

func aclJaas() string {
	return `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw" user_bob="bob-pw" user_carol="carol-pw";`
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// secured is one broker as the three users see it.
type secured struct {
	name    string
	addr    string
	clients map[string]*kgo.Client
}

// startKafkaSecured starts Kafka with a SASL_PLAINTEXT listener beside the
// PLAINTEXT one kafka.sh makes (inter-broker and the readiness probe; its
// ANONYMOUS principal is a super user, as the controller's is).
func startKafkaSecured(t *testing.T) string {
	root := repoRoot(t)
	dir := t.TempDir()
	port := freePort(t)
	props := filepath.Join(dir, "extra.properties")
	extra := "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n" +
		"super.users=User:admin;User:ANONYMOUS\n" +
		"sasl.enabled.mechanisms=PLAIN\n" +
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + aclJaas() + "\n" +
		"group.initial.rebalance.delay.ms=0\n"
	if err := os.WriteFile(props, []byte(extra), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "bench/kafka/kafka.sh")
	kdir := filepath.Join(dir, "kafka")
	env := append(os.Environ(), fmt.Sprintf("KAFKA_EXTRA_LISTENERS=SASL_PLAINTEXT://127.0.0.1:%d", port), "KAFKA_EXTRA_PROPERTIES="+props)
	cmd := exec.Command(script, "start", kdir)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starting Kafka: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(script, "stop", kdir).Run() })
	return fmt.Sprintf("127.0.0.1:%d", port)
}

func startStraitSecured(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "strait")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/strait/strait/cmd/strait").CombinedOutput(); err != nil {
		t.Fatalf("building strait: %v\n%s", err, out)
	}
	port := freePort(t)
	args := []string{
		// PLAINTEXT as Kafka's inter-broker listener (ANONYMOUS, a super user).
		"--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d", freePort(t), port),
		"--override", "log.dirs=" + t.TempDir(),
		"--override", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"--override", "super.users=User:admin;User:ANONYMOUS",
		"--override", "sasl.enabled.mechanisms=PLAIN",
		"--override", "listener.name.sasl_plaintext.plain.sasl.jaas.config=" + aclJaas(),
		"--override", "group.initial.rebalance.delay.ms=0",
	}
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(filepath.Join(t.TempDir(), "strait.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	cmd.Stdout = logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("strait's log, last 8000 bytes:\n%s", b)
		}
	})
	for i := 0; ; i++ {
		b, _ := os.ReadFile(logf.Name())
		if strings.Contains(string(b), "strait ready") {
			break
		}
		if i == 300 {
			t.Fatalf("strait did not become ready:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

func connectSecured(t *testing.T, name, addr string, maxv *kversion.Versions) *secured {
	s := &secured{name: name, addr: addr, clients: map[string]*kgo.Client{}}
	for user, pw := range aclUsers {
		opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: user, Pass: pw}.AsMechanism())}
		if maxv != nil {
			opts = append(opts, kgo.MaxVersions(maxv))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		s.clients[user] = cl
	}
	return s
}

// send sends req to the one broker directly (no coordinator lookup, no
// sharding by kgo).
func (s *secured) send(user string, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return s.clients[user].SeedBrokers()[0].Request(ctx, req)
}

func (s *secured) apiVersions(t *testing.T) *kmsg.ApiVersionsResponse {
	for i := 0; ; i++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName = "strait-reference" // v3+: Kafka refuses an empty name
		req.ClientSoftwareVersion = "1"
		resp, err := s.send("admin", req)
		if err == nil {
			r := resp.(*kmsg.ApiVersionsResponse)
			if r.ErrorCode != 0 || len(r.ApiKeys) == 0 {
				t.Fatalf("%s: ApiVersions: error %d, %d keys", s.name, r.ErrorCode, len(r.ApiKeys))
			}
			return r
		}
		if i == 50 {
			t.Fatalf("%s: ApiVersions: %v", s.name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// summary lists, sorted, what the comparison looks at in a response: every
// ErrorCode and *AuthorizedOperations field, and every element of a list
// (named by its topic, group, name or partition where it has one).
func summary(v any) []string {
	var out []string
	walk(reflect.ValueOf(v), "", &out)
	sort.Strings(out)
	return out
}

// Lists whose contents legitimately differ between two brokers (config
// names and sources, features, listeners, quorum voters, log dir paths).
var skipLists = map[string]bool{
	"Configs": true, "Brokers": true, "ApiKeys": true, "SupportedFeatures": true,
	"FinalizedFeatures": true, "Listeners": true, "Voters": true, "Observers": true,
	"Nodes": true, "Endpoints": true, "Synonyms": true, "Features": true,
}

var elementKeys = []string{"Topic", "Name", "Group", "GroupID", "TransactionalID", "ResourceName", "Principal", "Key", "Partition"}

func walk(v reflect.Value, path string, out *[]string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walk(v.Elem(), path, out)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f, fv := t.Field(i), v.Field(i)
			if !f.IsExported() {
				continue
			}
			p := path + "." + f.Name
			switch {
			case f.Name == "ErrorCode" || strings.HasSuffix(f.Name, "ErrorCode"):
				*out = append(*out, fmt.Sprintf("%s=%d", p, fv.Int()))
			case strings.HasSuffix(f.Name, "AuthorizedOperations"):
				*out = append(*out, fmt.Sprintf("%s=%d", p, fv.Int()))
			case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() != reflect.Uint8:
				if skipLists[f.Name] {
					continue
				}
				for j := 0; j < fv.Len(); j++ {
					ep := fmt.Sprintf("%s[%s]", p, elementKey(fv.Index(j), j))
					*out = append(*out, ep)
					walk(fv.Index(j), ep, out)
				}
			case fv.Kind() == reflect.Struct || fv.Kind() == reflect.Pointer:
				walk(fv, p, out)
			}
		}
	}
}

// topicIDNames names the test's topics by their ids on either broker, so
// that answers naming topics by id (OffsetCommit v10, TxnOffsetCommit v6)
// are compared topic by topic, whatever order each broker lists them in.
var topicIDNames = map[[16]byte]string{}

func elementKey(v reflect.Value, idx int) string {
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return fmt.Sprint(idx)
	}
	if f := v.FieldByName("TopicID"); f.IsValid() && f.Type() == reflect.TypeOf([16]byte{}) {
		if n, ok := topicIDNames[f.Interface().([16]byte)]; ok {
			if t := v.FieldByName("Topic"); !t.IsValid() || t.Kind() != reflect.String || t.String() == "" {
				return n
			}
		}
	}
	// Config resources: the broker's has an empty name.
	if f := v.FieldByName("ResourceType"); f.IsValid() && f.Kind() == reflect.Int8 {
		if n := v.FieldByName("ResourceName"); n.IsValid() && n.Kind() == reflect.String {
			return fmt.Sprintf("%d:%s", f.Int(), n.String())
		}
	}
	for _, k := range elementKeys {
		f := v.FieldByName(k)
		if !f.IsValid() {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			if f.String() != "" {
				return f.String()
			}
		case reflect.Pointer:
			if !f.IsNil() && f.Elem().Kind() == reflect.String {
				return f.Elem().String()
			}
		case reflect.Int32:
			return fmt.Sprint(f.Int())
		}
	}
	return fmt.Sprint(idx)
}

// retriable: codes a just-started coordinator answers for a moment.
func hasTransient(lines []string) bool {
	for _, l := range lines {
		for _, c := range []int16{kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code, kerr.LeaderNotAvailable.Code} {
			if strings.HasSuffix(l, fmt.Sprintf("ErrorCode=%d", c)) {
				return true
			}
		}
	}
	return false
}

// aclCase is one request, sent as bob and then as alice. build makes a
// fresh request per broker and user (with the topic ids on that broker).
type aclCase struct {
	key   int16
	name  string
	build func(topicIDs) kmsg.Request
}

func diffLines(a, b []string) string {
	in := func(s []string) map[string]int {
		m := map[string]int{}
		for _, x := range s {
			m[x]++
		}
		return m
	}
	ma, mb := in(a), in(b)
	var d []string
	for _, x := range a {
		if mb[x] == 0 {
			d = append(d, "  kafka only:  "+x)
		}
	}
	for _, x := range b {
		if ma[x] == 0 {
			d = append(d, "  strait only: "+x)
		}
	}
	return strings.Join(d, "\n")
}

func TestAuthorizationMatchesKafka(t *testing.T) {
	if os.Getenv("STRAIT_KAFKA_REFERENCE") != "1" {
		t.Skip("needs Java and Maven: run with STRAIT_KAFKA_REFERENCE=1 (make compat-reference)")
	}
	kAddr, sAddr := startKafkaSecured(t), startStraitSecured(t)
	// Versions: the highest both serve, so both parse the same request.
	kv := connectSecured(t, "kafka", kAddr, nil).apiVersions(t)
	sv := connectSecured(t, "strait", sAddr, nil).apiVersions(t)
	kmax, smax := map[int16]int16{}, map[int16]int16{}
	for _, k := range kv.ApiKeys {
		kmax[k.ApiKey] = k.MaxVersion
	}
	for _, k := range sv.ApiKeys {
		smax[k.ApiKey] = k.MaxVersion
	}
	// (Built on kgo's own table: one built from Kafka's ApiVersions
	// answer makes kgo skip SaslAuthenticate.)
	common := kversion.Stable()
	var straitOnly []int16
	for _, k := range sv.ApiKeys {
		m, ok := kmax[k.ApiKey]
		if !ok {
			straitOnly = append(straitOnly, k.ApiKey)
			continue
		}
		if k.ApiKey == 17 || k.ApiKey == 36 || k.ApiKey == 18 {
			continue
		}
		if k.MaxVersion < m {
			m = k.MaxVersion
		}
		if cur, ok := common.LookupMaxKeyVersion(k.ApiKey); !ok || m < cur {
			common.SetMaxKeyVersion(k.ApiKey, m)
		}
	}
	if len(straitOnly) > 0 {
		t.Logf("keys Strait serves and Kafka does not: %v", straitOnly)
	}
	brokers := []*secured{connectSecured(t, "kafka", kAddr, common), connectSecured(t, "strait", sAddr, common)}

	// The same topics and ACLs on both.
	ids := map[string]topicIDs{}
	aclCount := map[string]int{}
	for _, b := range brokers {
		adm := kadm.NewClient(b.clients["admin"])
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for _, topic := range []string{aclTopic, aclSecret} {
			if r, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || r.Err != nil {
				t.Fatalf("%s: create %s: %v %v", b.name, topic, err, r.Err)
			}
		}
		acls := []*kadm.ACLBuilder{
			kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics(aclTopic).ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAll),
			kadm.NewACLs().Allow("User:alice").AllowHosts("*").Groups(aclGroup).Operations(kadm.OpAll),
			kadm.NewACLs().Allow("User:alice").AllowHosts("*").TransactionalIDs(aclTxn).Operations(kadm.OpAll),
			kadm.NewACLs().Allow("User:alice").AllowHosts("*").Clusters().Operations(kadm.OpAll),
			kadm.NewACLs().Allow("User:bob").AllowHosts("*").Topics(aclTopic).Operations(kadm.OpDescribe),
			// carol: prefixed allows with literal denies (DENY wins) and
			// implied DESCRIBE from READ and WRITE.
			kadm.NewACLs().Allow("User:carol").AllowHosts("*").Topics("acl-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead),
			kadm.NewACLs().Deny("User:carol").DenyHosts("*").Topics(aclTopic).Operations(kadm.OpWrite),
			kadm.NewACLs().Allow("User:carol").AllowHosts("*").Groups("acl-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAll),
			kadm.NewACLs().Deny("User:carol").DenyHosts("*").Groups(aclGroup).Operations(kadm.OpRead),
			kadm.NewACLs().Allow("User:carol").AllowHosts("*").Clusters().Operations(kadm.OpDescribe, kadm.OpDescribeConfigs),
			kadm.NewACLs().Deny("User:carol").DenyHosts("*").Clusters().Operations(kadm.OpAlter),
			kadm.NewACLs().Allow("User:carol").AllowHosts("*").TransactionalIDs(aclTxn).Operations(kadm.OpWrite),
			// Hosts: a deny from the test's own address applies, an allow
			// from another does not.
			kadm.NewACLs().Deny("User:carol").DenyHosts("127.0.0.1").Topics("acl-t-auto").Operations(kadm.OpDescribe),
			kadm.NewACLs().Allow("User:bob").AllowHosts("10.9.9.9").Topics(aclSecret).Operations(kadm.OpDescribe),
			// The wildcard principal.
			kadm.NewACLs().Allow("User:*").AllowHosts("*").Groups("secret-g").Operations(kadm.OpDescribe),
		}
		created := 0
		for _, a := range acls {
			res, err := adm.CreateACLs(ctx, a)
			if err != nil {
				t.Fatalf("%s: create ACLs: %v", b.name, err)
			}
			for _, r := range res {
				if r.Err != nil {
					t.Fatalf("%s: create ACL %+v: %v", b.name, r, r.Err)
				}
				created++
			}
		}
		aclCount[b.name] = created
		// Until acl-t has a leader and both coordinators answer.
		for i := 0; ; i++ {
			td, err := adm.ListTopics(ctx, aclTopic, aclSecret)
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorKeys = []string{aclGroup}
			fr, ferr := b.send("admin", fc)
			ft := kmsg.NewPtrFindCoordinatorRequest()
			ft.CoordinatorType = 1
			ft.CoordinatorKeys = []string{aclTxn}
			tr, terr := b.send("admin", ft)
			led := func(n string) bool {
				return td[n].Err == nil && len(td[n].Partitions) == 1 && td[n].Partitions[0].Leader >= 0
			}
			if err == nil && led(aclTopic) && led(aclSecret) &&
				ferr == nil && fr.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode == 0 &&
				terr == nil && tr.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode == 0 {
				ids[b.name] = topicIDs{aclTopic: td[aclTopic].ID, aclSecret: td[aclSecret].ID}
				for _, n := range []string{aclTopic, aclSecret} {
					topicIDNames[td[n].ID] = n
				}
				break
			}
			if i == 100 {
				t.Fatalf("%s: not ready: %v %v %v", b.name, err, ferr, terr)
			}
			time.Sleep(200 * time.Millisecond)
		}
		cancel()
	}
	// ACLs reach Kafka's authorizer through the metadata log a moment
	// after CreateAcls answers: wait until the broker lists every one
	// (DescribeAcls reads the authorizer's own view).
	for _, b := range brokers {
		n := 0
		for i := 0; ; i++ {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType = kmsg.ACLResourceTypeAny
			req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
			req.Operation = kmsg.ACLOperationAny
			req.PermissionType = kmsg.ACLPermissionTypeAny
			resp, err := b.send("admin", req)
			n = 0
			if err == nil {
				for _, r := range resp.(*kmsg.DescribeACLsResponse).Resources {
					n += len(r.ACLs)
				}
			}
			if n == aclCount[b.name] {
				break
			}
			if i == 100 {
				t.Fatalf("%s: %d ACLs listed, %d created: %v", b.name, n, aclCount[b.name], err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	cases := aclCases()
	verbose := os.Getenv("STRAIT_ACL_DIFF_VERBOSE") == "1" // every summary compared, in the log
	covered := map[int16]bool{}
	var matched, differed, denied int
	var diffs []string
	for _, c := range cases {
		if _, ok := kmax[c.key]; !ok {
			t.Logf("%s: Kafka does not serve key %d; not compared", c.name, c.key)
			continue
		}
		if _, ok := smax[c.key]; !ok {
			t.Logf("%s: Strait does not advertise key %d; not compared", c.name, c.key)
			continue
		}
		covered[c.key] = true
		for _, user := range []string{"bob", "carol", "alice"} {
			var got [2][]string
			for i, b := range brokers {
				for try := 0; ; try++ {
					resp, err := b.send(user, c.build(ids[b.name]))
					if err != nil {
						got[i] = []string{"error: " + err.Error()}
						break
					}
					got[i] = summary(resp)
					if !hasTransient(got[i]) || try == 20 {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
			}
			if verbose {
				t.Logf("%s as %s: Kafka %v, Strait %v", c.name, user, got[0], got[1])
			}
			if user == "bob" && deniedSomewhere(got[1]) {
				denied++
			}
			if reflect.DeepEqual(got[0], got[1]) {
				matched++
				continue
			}
			differed++
			d := fmt.Sprintf("%s (key %d) as %s:\n%s", c.name, c.key, user, diffLines(got[0], got[1]))
			if known, ok := knownDifferences[c.name+" as "+user]; ok && known(got[0], got[1]) {
				t.Logf("known difference (DIFFERENCES.md): %s", d)
				continue
			}
			diffs = append(diffs, d)
		}
	}
	var missing []int16
	for _, k := range sv.ApiKeys {
		if _, ok := kmax[k.ApiKey]; ok && !covered[k.ApiKey] && !notCompared[k.ApiKey] {
			missing = append(missing, k.ApiKey)
		}
	}
	t.Logf("%d API keys compared, %d requests the same, %d different; %d of bob's requests refused in part or whole", len(covered), matched, differed, denied)
	// Both brokers agreeing without an authorizer would prove nothing.
	if denied < 40 {
		t.Errorf("only %d of bob's requests were refused anything; the authorizer is not deciding", denied)
	}
	if len(missing) > 0 {
		t.Errorf("API keys both serve without a case: %v", missing)
	}
	for _, d := range diffs {
		t.Errorf("a difference not in DIFFERENCES.md:\n%s", d)
	}

	// A KIP-848 regex subscription resolves to the matching topics the
	// member's principal may DESCRIBE (KAFKA-18813). Kafka resolves a new
	// regex in the background, so the assignment comes in a later
	// heartbeat: each broker is asked until it assigns something.
	var assigned [2][]string
	for i, b := range brokers {
		assigned[i] = regexAssignment(t, b, "carol", "acl-rx", "acl-t.*|secret")
	}
	t.Logf("regex acl-t.*|secret as carol: Kafka assigns %v, Strait %v", assigned[0], assigned[1])
	if !slices.Equal(assigned[0], assigned[1]) || slices.Contains(assigned[1], aclSecret) {
		t.Errorf("regex subscription as carol: Kafka assigns %v, Strait %v", assigned[0], assigned[1])
	}
}

// regexAssignment joins group as user with a regex subscription and
// heartbeats (at most 50 times, 200 ms apart) until the coordinator assigns
// partitions; it returns the assigned topics' names, then leaves.
func regexAssignment(t *testing.T, b *secured, user, group, regex string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := map[[16]byte]string{}
	listed, err := kadm.NewClient(b.clients["admin"]).ListTopics(ctx)
	if err != nil {
		t.Fatalf("%s: list topics: %v", b.name, err)
	}
	for _, d := range listed {
		names[d.ID] = d.Topic
	}
	const member = "acl-rx-member-0000000000"
	epoch := int32(0)
	var out []string
	for i := 0; i < 50 && len(out) == 0; i++ {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.MemberEpoch = group, member, epoch
		r.RebalanceTimeoutMillis = -1
		if epoch == 0 {
			r.RebalanceTimeoutMillis = 30000
			r.SubscribedTopicRegex = kmsg.StringPtr(regex)
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		resp, err := b.send(user, r)
		if err != nil {
			t.Fatalf("%s: heartbeat: %v", b.name, err)
		}
		hr := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
		if hr.ErrorCode != 0 {
			t.Fatalf("%s: heartbeat as %s: %v", b.name, user, kerr.ErrorForCode(hr.ErrorCode))
		}
		epoch = hr.MemberEpoch
		if hr.Assignment != nil {
			for _, tp := range hr.Assignment.Topics {
				out = append(out, names[tp.TopicID])
			}
		}
	}
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = group, member, -1
	b.send(user, leave)
	slices.Sort(out)
	return out
}

// deniedSomewhere: an authorization failure anywhere in the answer.
func deniedSomewhere(lines []string) bool {
	for _, l := range lines {
		for _, e := range []*kerr.Error{kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed,
			kerr.TransactionalIDAuthorizationFailed, kerr.DelegationTokenAuthorizationFailed} {
			if strings.HasSuffix(l, fmt.Sprintf("ErrorCode=%d", e.Code)) {
				return true
			}
		}
	}
	return false
}

// notCompared: keys with no authorization of their own (the SASL exchange,
// ApiVersions before it), that only a telemetry plugin serves, or whose
// answer depends on a running new member or the coordinator's timing.
var notCompared = map[int16]bool{
	17: true, 36: true, // SaslHandshake, SaslAuthenticate: before authorization
	71: true, 72: true, // telemetry: only with a metrics plugin
	80: true, // AddRaftVoter: Kafka's leader contacts the new voter first
	// StreamsGroupHeartbeat: a join's answer depends on each coordinator's
	// timing (Kafka assigns in the background); its GROUP READ check is
	// ConsumerGroupHeartbeat's, which is compared. TestConformanceMatchesKafka
	// compares its answers.
	88: true,
}

// knownDifferences: the differences listed in compat-tests/DIFFERENCES.md
// ("Authorization"), by case and user, each with what both sides must
// still answer.
var knownDifferences = map[string]func(kafka, strait []string) bool{
	// Not about authorization: Kafka 4.4 answers the Metadata request that
	// auto-creates a topic with UNKNOWN_TOPIC_OR_PARTITION and creates it
	// in the background; Strait creates it before answering and answers
	// it with its partition. The rest of the answer is the same.
	"Metadata auto-creation under a describable prefix as alice": func(kafka, strait []string) bool {
		const p = ".Topics[acl-t-auto]."
		rest := func(lines []string) (out []string) {
			for _, l := range lines {
				if !strings.HasPrefix(l, p+"ErrorCode=") && !strings.HasPrefix(l, p+"Partitions[") {
					out = append(out, l)
				}
			}
			return out
		}
		return slices.Contains(kafka, p+fmt.Sprintf("ErrorCode=%d", kerr.UnknownTopicOrPartition.Code)) &&
			slices.Contains(strait, p+"ErrorCode=0") && reflect.DeepEqual(rest(kafka), rest(strait))
	},
	// Not about authorization: a heartbeat with an epoch above 0 to a
	// group the coordinator does not know (DIFFERENCES.md, consumer
	// groups): Kafka GROUP_ID_NOT_FOUND, Strait UNKNOWN_MEMBER_ID.
	"ConsumerGroupHeartbeat as carol": func(kafka, strait []string) bool {
		return reflect.DeepEqual(kafka, []string{fmt.Sprintf(".ErrorCode=%d", kerr.GroupIDNotFound.Code)}) &&
			reflect.DeepEqual(strait, []string{fmt.Sprintf(".ErrorCode=%d", kerr.UnknownMemberID.Code)})
	},
	// Not about authorization: Kafka 4.4 assigns a share group in the
	// background (group.share.assignment.interval.ms), so the joining
	// member's first heartbeat, and a describe right after, show no
	// partitions yet; Strait assigns at once (DIFFERENCES.md, share
	// groups). Everything else is the same.
	"ShareGroupHeartbeat join as carol": onlyStraitAssigns,
	"ShareGroupDescribe as carol":       onlyStraitAssigns,
	// Not about authorization: a ShareFetch of a share-partition its group
	// never initialized (aclGroup is no share group). Kafka 4.4 answers
	// this fetch (MaxWait 0) with no partition; its SharePartition, finding
	// no state, fails the partition with UNKNOWN_SERVER_ERROR, which Strait
	// answers.
	"ShareFetch as alice": func(kafka, strait []string) bool {
		const p = ".Topics[acl-t]"
		rest := slices.DeleteFunc(slices.Clone(strait), func(l string) bool { return strings.HasPrefix(l, p) })
		return slices.Contains(strait, p+".Partitions[0].ErrorCode=-1") && reflect.DeepEqual(kafka, rest)
	},
	// Kafka 4.4 throws a NullPointerException building its
	// CLUSTER_AUTHORIZATION_FAILED answer when users is null, and never
	// answers (the connection hangs until the client gives up); Strait
	// answers CLUSTER_AUTHORIZATION_FAILED.
	"DescribeUserScramCredentials all users as bob": func(kafka, strait []string) bool {
		return len(kafka) == 1 && strings.HasPrefix(kafka[0], "error: ") &&
			reflect.DeepEqual(strait, []string{fmt.Sprintf(".ErrorCode=%d", kerr.ClusterAuthorizationFailed.Code)})
	},
}

// onlyStraitAssigns: the two answers differ only by the assignment Strait
// already made.
func onlyStraitAssigns(kafka, strait []string) bool {
	rest := slices.DeleteFunc(slices.Clone(strait), func(l string) bool { return strings.Contains(l, ".Assignment.TopicPartitions[") })
	return len(rest) < len(strait) && reflect.DeepEqual(kafka, rest)
}
