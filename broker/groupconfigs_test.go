package broker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// GROUP config resources (type 32) as Kafka 4.4 answers them; the expected
// messages, sources and synonyms are those of a Kafka 4.4 broker given the
// same requests.

func describeGroupConfigs(t *testing.T, cl *kgo.Client, group string, names ...string) kmsg.DescribeConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, names
	req.Resources = append(req.Resources, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Resources[0]
}

type groupOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

func set(name, value string) groupOp { return groupOp{name, kmsg.IncrementalAlterConfigOpSet, &value} }
func del(name string) groupOp        { return groupOp{name, kmsg.IncrementalAlterConfigOpDelete, nil} }

// alterGroup sends one IncrementalAlterConfigs for group and returns its
// error code and message.
func alterGroup(t *testing.T, cl *kgo.Client, group string, validateOnly bool, ops ...groupOp) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = o.name, o.op, o.value
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	rr := resp.Resources[0]
	msg := ""
	if rr.ErrorMessage != nil {
		msg = *rr.ErrorMessage
	}
	return rr.ErrorCode, msg
}

func entryOf(t *testing.T, res kmsg.DescribeConfigsResponseResource, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	for _, e := range res.Configs {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("%s not described; got %d entries", name, len(res.Configs))
	return kmsg.DescribeConfigsResponseResourceConfig{}
}

// synonymsString renders an entry's synonyms as SOURCE:name=value, ...
func synonymsString(e kmsg.DescribeConfigsResponseResourceConfig) string {
	s := ""
	for i, syn := range e.ConfigSynonyms {
		if i > 0 {
			s += ", "
		}
		v := "null"
		if syn.Value != nil {
			v = *syn.Value
		}
		s += syn.Source.String() + ":" + syn.Name + "=" + v
	}
	return s
}

func checkEntry(t *testing.T, res kmsg.DescribeConfigsResponseResource, name, value string, source kmsg.ConfigSource, synonyms string) {
	t.Helper()
	e := entryOf(t, res, name)
	if e.Value == nil || *e.Value != value || e.Source != source || synonymsString(e) != synonyms || e.ReadOnly || e.IsSensitive {
		v := "null"
		if e.Value != nil {
			v = *e.Value
		}
		t.Errorf("%s: value %s source %v synonyms {%s} read-only %v sensitive %v; want %s %v {%s}",
			name, v, e.Source, synonymsString(e), e.ReadOnly, e.IsSensitive, value, source, synonyms)
	}
}

func TestGroupConfigsDescribeAndAlter(t *testing.T) {
	dir := t.TempDir()
	// A static broker value shows as the group default's source.
	srv := startBroker(t, dir, "group.consumer.heartbeat.interval.ms", "6000")
	cl := newClient(t, srv)

	// A group that does not exist has every non-internal key at its default.
	res := describeGroupConfigs(t, cl, "no-such-group")
	if res.ErrorCode != 0 || len(res.Configs) != 21 {
		t.Fatalf("describe: error %d, %d entries; want 0 and Kafka 4.4's 21", res.ErrorCode, len(res.Configs))
	}
	checkEntry(t, res, "consumer.session.timeout.ms", "45000", kmsg.ConfigSourceDefaultConfig, "DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000")
	checkEntry(t, res, "consumer.heartbeat.interval.ms", "6000", kmsg.ConfigSourceStaticBrokerConfig,
		"STATIC_BROKER_CONFIG:group.consumer.heartbeat.interval.ms=6000, DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000")
	checkEntry(t, res, "share.auto.offset.reset", "latest", kmsg.ConfigSourceDefaultConfig, "DEFAULT_CONFIG:share.auto.offset.reset=latest")
	checkEntry(t, res, "streams.assignor.name", "sticky", kmsg.ConfigSourceDefaultConfig, "DEFAULT_CONFIG:group.streams.assignors=sticky")
	checkEntry(t, res, "errors.deadletterqueue.topic.name", "", kmsg.ConfigSourceDefaultConfig, "DEFAULT_CONFIG:errors.deadletterqueue.topic.name=")
	if e := entryOf(t, res, "share.record.lock.duration.ms"); e.ConfigType != kmsg.ConfigTypeInt || e.Documentation == nil || *e.Documentation == "" {
		t.Errorf("share.record.lock.duration.ms: type %v, documentation %v", e.ConfigType, e.Documentation)
	}
	for _, e := range res.Configs {
		if e.Name == "consumer.assignor.offload.enable" || e.Name == "streams.num.warmup.replicas" {
			t.Errorf("internal key %s described while unset", e.Name)
		}
	}
	if res := describeGroupConfigs(t, cl, ""); res.ErrorCode != kerr.InvalidRequest.Code || res.ErrorMessage == nil || *res.ErrorMessage != "Group name must not be empty" {
		t.Errorf("describe of the empty group name: %d %v", res.ErrorCode, res.ErrorMessage)
	}

	// Set before the group exists, as kafka-configs --alter --add-config does.
	if code, msg := alterGroup(t, cl, "g", false, set("consumer.session.timeout.ms", "50000"),
		set("share.auto.offset.reset", "by_duration:PT1H"), set("streams.rack.aware.assignment.tags", "a, b"),
		set("consumer.assignor.offload.enable", "FALSE")); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}
	res = describeGroupConfigs(t, cl, "g")
	checkEntry(t, res, "consumer.session.timeout.ms", "50000", kmsg.ConfigSourceGroupConfig,
		"GROUP_CONFIG:consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000")
	checkEntry(t, res, "share.auto.offset.reset", "by_duration:PT1H", kmsg.ConfigSourceGroupConfig,
		"GROUP_CONFIG:share.auto.offset.reset=by_duration:PT1H, DEFAULT_CONFIG:share.auto.offset.reset=latest")
	checkEntry(t, res, "streams.rack.aware.assignment.tags", "a,b", kmsg.ConfigSourceGroupConfig,
		"GROUP_CONFIG:streams.rack.aware.assignment.tags=a,b, DEFAULT_CONFIG:group.streams.rack.aware.assignment.tags=")
	checkEntry(t, res, "consumer.assignor.offload.enable", "false", kmsg.ConfigSourceGroupConfig,
		"GROUP_CONFIG:consumer.assignor.offload.enable=false, DEFAULT_CONFIG:group.consumer.assignor.offload.enable=true")
	if len(res.Configs) != 22 {
		t.Errorf("%d entries with one internal key set, want 22", len(res.Configs))
	}
	if res := describeGroupConfigs(t, cl, "g", "consumer.session.timeout.ms", "nope"); len(res.Configs) != 1 {
		t.Errorf("describe of named keys: %d entries, want 1", len(res.Configs))
	}

	// Refusals, each leaving the configs as they were.
	for _, c := range []struct {
		group string
		ops   []groupOp
		code  int16
		msg   string
	}{
		{"", []groupOp{set("consumer.session.timeout.ms", "50000")}, kerr.InvalidRequest.Code, "Default group resources are not allowed."},
		{"g", []groupOp{set("foo", "1")}, kerr.InvalidConfig.Code, "Unknown group config name: foo"},
		{"g", []groupOp{set("consumer.session.timeout.ms", "40000")}, kerr.InvalidConfig.Code, "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{"g", []groupOp{set("consumer.session.timeout.ms", "0")}, kerr.InvalidConfig.Code, "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"},
		{"g", []groupOp{set("consumer.heartbeat.interval.ms", "abc")}, kerr.InvalidConfig.Code, "Invalid value abc for configuration consumer.heartbeat.interval.ms: Not a number of type INT"},
		{"g", []groupOp{set("consumer.heartbeat.interval.ms", "16000")}, kerr.InvalidConfig.Code, "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
		{"g", []groupOp{set("share.record.lock.duration.ms", "14000")}, kerr.InvalidConfig.Code, "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{"g", []groupOp{set("share.delivery.count.limit", "1")}, kerr.InvalidConfig.Code, "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"},
		{"g", []groupOp{set("share.auto.offset.reset", "none")}, kerr.InvalidConfig.Code, "Invalid value none for configuration share.auto.offset.reset: Invalid value `none` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{"g", []groupOp{set("share.auto.offset.reset", "by_duration:-PT1H")}, kerr.InvalidConfig.Code, "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{"g", []groupOp{set("share.isolation.level", "READ_COMMITTED")}, kerr.InvalidConfig.Code, "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{"g", []groupOp{set("share.renew.acknowledge.enable", "maybe")}, kerr.InvalidConfig.Code, "Invalid value maybe for configuration share.renew.acknowledge.enable: Expected value to be either true or false"},
		{"g", []groupOp{set("streams.num.standby.replicas", "3")}, kerr.InvalidConfig.Code, "streams.num.standby.replicas must be less than or equal to 2"},
		{"g", []groupOp{set("streams.task.offset.interval.ms", "10")}, kerr.InvalidConfig.Code, "streams.task.offset.interval.ms must be greater than or equal to 15000"},
		{"g", []groupOp{set("streams.assignor.name", "foo")}, kerr.InvalidConfig.Code, "streams.assignor.name 'foo' is not a registered task assignor. Registered assignors are: [sticky]."},
		{"g", []groupOp{set("errors.deadletterqueue.topic.name", "__x")}, kerr.InvalidConfig.Code, "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"},
		{"g", []groupOp{set("streams.session.timeout.ms", "45000"), set("streams.heartbeat.interval.ms", "15000"), set("share.session.timeout.ms", "45000"), set("share.heartbeat.interval.ms", "5000")}, 0, ""},
		{"g", []groupOp{{"streams.rack.aware.assignment.tags", kmsg.IncrementalAlterConfigOpAppend, ptrTo("c")}}, kerr.InvalidConfig.Code, "Can't APPEND to key streams.rack.aware.assignment.tags because its type is not LIST."},
		{"g", []groupOp{{"consumer.session.timeout.ms", kmsg.IncrementalAlterConfigOpSet, nil}}, kerr.InvalidRequest.Code, "Null value not supported for : consumer.session.timeout.ms"},
	} {
		code, msg := alterGroup(t, cl, c.group, false, c.ops...)
		if code != c.code || msg != c.msg {
			t.Errorf("%s %v: %d %q, want %d %q", c.group, c.ops[0].name, code, msg, c.code, c.msg)
		}
	}
	// Session above heartbeat, the broker's value standing in: 45000 > 15000
	// passed above; a session of 45000 with a heartbeat override of 45000 does not.
	if code, msg := alterGroup(t, cl, "h", false, set("consumer.heartbeat.interval.ms", "15000"), set("consumer.session.timeout.ms", "45000")); code != 0 {
		t.Errorf("45000/15000: %d %s", code, msg)
	}

	// validate_only writes nothing.
	if code, msg := alterGroup(t, cl, "g", true, set("consumer.session.timeout.ms", "55000")); code != 0 {
		t.Fatalf("validate only: %d %s", code, msg)
	}
	checkEntry(t, describeGroupConfigs(t, cl, "g"), "consumer.session.timeout.ms", "50000", kmsg.ConfigSourceGroupConfig,
		"GROUP_CONFIG:consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000")

	// DELETE (of a key set or not) falls back to the default.
	if code, msg := alterGroup(t, cl, "g", false, del("consumer.session.timeout.ms"), del("foo")); code != 0 {
		t.Fatalf("delete: %d %s", code, msg)
	}
	checkEntry(t, describeGroupConfigs(t, cl, "g"), "consumer.session.timeout.ms", "45000", kmsg.ConfigSourceDefaultConfig,
		"DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000")

	// AlterConfigs (legacy) replaces the group's whole configuration.
	la := kmsg.NewPtrAlterConfigsRequest()
	lr := kmsg.NewAlterConfigsRequestResource()
	lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
	lc := kmsg.NewAlterConfigsRequestResourceConfig()
	lc.Name, lc.Value = "consumer.session.timeout.ms", ptrTo("55000")
	lr.Configs = append(lr.Configs, lc)
	la.Resources = append(la.Resources, lr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lresp, err := la.RequestWith(ctx, cl)
	if err != nil || lresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("legacy alter: %v %+v", err, lresp)
	}
	res = describeGroupConfigs(t, cl, "g")
	checkEntry(t, res, "consumer.session.timeout.ms", "55000", kmsg.ConfigSourceGroupConfig,
		"GROUP_CONFIG:consumer.session.timeout.ms=55000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000")
	checkEntry(t, res, "share.auto.offset.reset", "latest", kmsg.ConfigSourceDefaultConfig, "DEFAULT_CONFIG:share.auto.offset.reset=latest")

	// The configs are in etcd: a restarted broker has them.
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	srv = startBroker(t, dir, "group.consumer.heartbeat.interval.ms", "6000")
	defer srv.Close()
	cl = newClient(t, srv)
	checkEntry(t, describeGroupConfigs(t, cl, "g"), "consumer.session.timeout.ms", "55000", kmsg.ConfigSourceGroupConfig,
		"GROUP_CONFIG:consumer.session.timeout.ms=55000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000")

	// ListConfigResources (what kafka-configs --entity-type groups --describe
	// lists) names the groups that have configs; a type Kafka does not list
	// is UNSUPPORTED_VERSION.
	list := func(types ...int8) *kmsg.ListConfigResourcesResponse {
		t.Helper()
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = types
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var groups []string
	for _, r := range list(int8(kmsg.ConfigResourceTypeGroupConfig)).ConfigResources {
		if r.Type != int8(kmsg.ConfigResourceTypeGroupConfig) {
			t.Errorf("listed %s of type %d when asked for groups", r.Name, r.Type)
		}
		groups = append(groups, r.Name)
	}
	if strings.Join(groups, ",") != "g,h" {
		t.Errorf("groups with configs: %v, want [g h]", groups)
	}
	if resp := list(); len(resp.ConfigResources) < 4 || resp.ConfigResources[0].Name != "g" {
		t.Errorf("every config resource: %+v", resp.ConfigResources)
	}
	if resp := list(99); resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Errorf("unknown resource type: error %d, want UNSUPPORTED_VERSION", resp.ErrorCode)
	}
}

func ptrTo(s string) *string { return &s }

// A running KIP-848 group gets a changed consumer.heartbeat.interval.ms in
// its member's next heartbeat response, and the broker's value back once the
// config is deleted; another group keeps the broker's value throughout.
func TestGroupConfigHeartbeatIntervalReachesRunningGroup(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv)
	createTopic(t, cl, "hb-topic", 2, nil)

	type member struct {
		group, id string
		epoch     int32
	}
	heartbeat := func(m *member) int32 {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
		req.RebalanceTimeoutMillis = 60000
		if m.epoch == 0 {
			req.SubscribedTopicNames = []string{"hb-topic"}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		} else {
			req.RebalanceTimeoutMillis = -1
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s: %v", m.group, kerr.ErrorForCode(resp.ErrorCode))
		}
		m.epoch = resp.MemberEpoch
		return resp.HeartbeatIntervalMillis
	}
	a := &member{group: "hb-a", id: "member-a-0123456789abcdef"}
	b := &member{group: "hb-b", id: "member-b-0123456789abcdef"}
	if ms := heartbeat(a); ms != 5000 {
		t.Fatalf("joining heartbeat interval %d ms, want the broker's 5000", ms)
	}
	heartbeat(b)
	if code, msg := alterGroup(t, cl, "hb-a", false, set("consumer.heartbeat.interval.ms", "7000")); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}
	if ms := heartbeat(a); ms != 7000 {
		t.Fatalf("heartbeat interval after the change %d ms, want 7000", ms)
	}
	if ms := heartbeat(b); ms != 5000 {
		t.Fatalf("other group's heartbeat interval %d ms, want 5000", ms)
	}
	if code, msg := alterGroup(t, cl, "hb-a", false, del("consumer.heartbeat.interval.ms")); code != 0 {
		t.Fatalf("delete: %d %s", code, msg)
	}
	if ms := heartbeat(a); ms != 5000 {
		t.Fatalf("heartbeat interval after the delete %d ms, want 5000", ms)
	}
}
