package broker_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// configOf returns the named config of a described resource.
func configOf(t *testing.T, rc kadm.ResourceConfig, name string) kadm.Config {
	t.Helper()
	for _, c := range rc.Configs {
		if c.Key == name {
			return c
		}
	}
	t.Fatalf("%s: no config %s among %d", rc.Name, name, len(rc.Configs))
	return kadm.Config{}
}

// expectConfig checks a config's value, source and synonyms ("name=value@SOURCE").
func expectConfig(t *testing.T, c kadm.Config, value string, source kmsg.ConfigSource, synonyms ...string) {
	t.Helper()
	if got := c.MaybeValue(); got != value || c.Source != source {
		t.Errorf("%s = %q (%s), want %q (%s)", c.Key, got, c.Source, value, source)
	}
	var got []string
	for _, s := range c.Synonyms {
		v := "<nil>"
		if s.Value != nil {
			v = *s.Value
		}
		got = append(got, s.Key+"="+v+"@"+s.Source.String())
	}
	if strings.Join(got, " ") != strings.Join(synonyms, " ") {
		t.Errorf("%s synonyms = %v, want %v", c.Key, got, synonyms)
	}
}

func describeTopic(t *testing.T, adm *kadm.Client, topic string) kadm.ResourceConfig {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxFor(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	return rc
}

func describeBroker(t *testing.T, adm *kadm.Client, name string, brokers ...int32) kadm.ResourceConfig {
	t.Helper()
	rcs, err := adm.DescribeBrokerConfigs(ctxFor(t), brokers...)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(name, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe broker %q: %v %v", name, err, rc.Err)
	}
	return rc
}

// TestDescribeConfigs: a topic lists every Kafka 4.4 topic config with the
// value in force, its source and its synonyms as Kafka computes them; the
// broker lists its keys with static, default and sensitive values; errors
// per resource as Kafka gives them.
func TestDescribeConfigs(t *testing.T) {
	srv := startBroker(t, t.TempDir(), "log.retention.hours", "100", "message.max.bytes", "2000000")
	defer srv.Close()
	cl := newClient(t, srv)
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "described", 1, map[string]*string{
		"retention.ms": kadm.StringPtr("1000"), "cleanup.policy": kadm.StringPtr("compact, delete"),
	})

	rc := describeTopic(t, adm, "described")
	// Kafka 4.4's LogConfig has 37 topic configs, not counting internal ones.
	if len(rc.Configs) != 37 {
		t.Errorf("%d topic configs, want 37", len(rc.Configs))
	}
	// log.retention.hours is a lower-precedence spelling of retention.ms's
	// broker synonym, so Kafka lists no broker synonym for it.
	expectConfig(t, configOf(t, rc, "retention.ms"), "1000", kmsg.ConfigSourceDynamicTopicConfig,
		"retention.ms=1000@DYNAMIC_TOPIC_CONFIG")
	expectConfig(t, configOf(t, rc, "cleanup.policy"), "compact,delete", kmsg.ConfigSourceDynamicTopicConfig,
		"cleanup.policy=compact,delete@DYNAMIC_TOPIC_CONFIG", "log.cleanup.policy=delete@DEFAULT_CONFIG")
	expectConfig(t, configOf(t, rc, "max.message.bytes"), "2000000", kmsg.ConfigSourceStaticBrokerConfig,
		"message.max.bytes=2000000@STATIC_BROKER_CONFIG", "message.max.bytes=1048588@DEFAULT_CONFIG")
	expectConfig(t, configOf(t, rc, "segment.ms"), "604800000", kmsg.ConfigSourceDefaultConfig)
	expectConfig(t, configOf(t, rc, "segment.bytes"), "1073741824", kmsg.ConfigSourceDefaultConfig,
		"log.segment.bytes=1073741824@DEFAULT_CONFIG")

	id := strconv.Itoa(int(srv.NodeID()))
	b := describeBroker(t, adm, id, srv.NodeID())
	expectConfig(t, configOf(t, b, "log.retention.hours"), "100", kmsg.ConfigSourceStaticBrokerConfig,
		"log.retention.hours=100@STATIC_BROKER_CONFIG", "log.retention.hours=168@DEFAULT_CONFIG")
	expectConfig(t, configOf(t, b, "log.retention.ms"), "", kmsg.ConfigSourceDefaultConfig)
	expectConfig(t, configOf(t, b, "num.partitions"), "1", kmsg.ConfigSourceDefaultConfig,
		"num.partitions=1@DEFAULT_CONFIG")
	if c := configOf(t, b, "ssl.keystore.password"); !c.Sensitive || c.Value != nil {
		t.Errorf("ssl.keystore.password: sensitive %v value %v", c.Sensitive, c.Value)
	}
	if rc := describeBroker(t, adm, ""); len(rc.Configs) != 0 {
		t.Errorf("cluster default without dynamic configs lists %d", len(rc.Configs))
	}

	// Read-only flags, types and documentation come with the raw request.
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeDocumentation = true
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeBroker, id}, {kmsg.ConfigResourceTypeTopic, "no-such-topic"},
		{kmsg.ConfigResourceTypeTopic, "bad name"}, {kmsg.ConfigResourceTypeBroker, "abc"}} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.typ, r.name
		rr.ConfigNames = []string{"num.partitions", "log.retention.ms"}
		req.Resources = append(req.Resources, rr)
	}
	resp, err := req.RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	// The client splits the request by broker: match results by name.
	byName := map[string]kmsg.DescribeConfigsResponseResource{}
	for _, r := range resp.Resources {
		byName[r.ResourceName] = r
	}
	got := byName[id].Configs
	if len(got) != 2 || got[0].Name != "log.retention.ms" || got[0].ReadOnly || got[0].ConfigType != kmsg.ConfigTypeLong ||
		got[1].Name != "num.partitions" || !got[1].ReadOnly || got[1].Documentation == nil ||
		!strings.Contains(*got[1].Documentation, "number of log partitions") {
		t.Errorf("broker configs by name: %+v", got)
	}
	for name, want := range map[string]int16{id: 0, "no-such-topic": kerr.UnknownTopicOrPartition.Code,
		"bad name": kerr.InvalidTopicException.Code, "abc": kerr.InvalidRequest.Code} {
		if r := byName[name]; r.ErrorCode != want {
			t.Errorf("resource %q: error %d, want %d", name, r.ErrorCode, want)
		}
	}
	if msg := byName["abc"].ErrorMessage; msg == nil || *msg != "Broker id must be an integer, but it is: abc" {
		t.Errorf("bad broker id message: %v", msg)
	}
}

func alterErr(t *testing.T, resps kadm.AlterConfigsResponses, err error) (error, string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if len(resps) != 1 {
		t.Fatalf("%d responses", len(resps))
	}
	return resps[0].Err, resps[0].ErrMessage
}

func expectAlterError(t *testing.T, resps kadm.AlterConfigsResponses, err error, want *kerr.Error, msg string) {
	t.Helper()
	got, gotMsg := alterErr(t, resps, err)
	if !errors.Is(got, want) || (msg != "" && gotMsg != msg) {
		t.Errorf("got %v %q, want %v %q", got, gotMsg, want, msg)
	}
}

// produceSized produces one record of n bytes and returns the error.
func produceSized(t *testing.T, cl *kgo.Client, topic string, n int) error {
	t.Helper()
	return cl.ProduceSync(ctxFor(t), &kgo.Record{Topic: topic, Value: make([]byte, n)}).FirstErr()
}

// TestAlterTopicConfigs: incremental SET, APPEND, SUBTRACT and DELETE and the
// legacy full replacement, validated as Kafka does; the open log applies the
// new max.message.bytes at once.
func TestAlterTopicConfigs(t *testing.T) {
	srv := startBroker(t, t.TempDir())
	defer srv.Close()
	cl := newClient(t, srv, kgo.ProducerBatchMaxBytes(4<<20), kgo.RecordRetries(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "altered", 1, nil)
	ctx := ctxFor(t)
	set := func(name, value string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: kadm.StringPtr(value)}
	}

	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		set("retention.ms", "5000"),
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
	}, "altered")
	if e, msg := alterErr(t, resps, err); e != nil {
		t.Fatalf("alter: %v %s", e, msg)
	}
	rc := describeTopic(t, adm, "altered")
	expectConfig(t, configOf(t, rc, "retention.ms"), "5000", kmsg.ConfigSourceDynamicTopicConfig, "retention.ms=5000@DYNAMIC_TOPIC_CONFIG")
	expectConfig(t, configOf(t, rc, "cleanup.policy"), "delete,compact", kmsg.ConfigSourceDynamicTopicConfig,
		"cleanup.policy=delete,compact@DYNAMIC_TOPIC_CONFIG", "log.cleanup.policy=delete@DEFAULT_CONFIG")

	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kadm.StringPtr("delete")},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
	}, "altered")
	if e, msg := alterErr(t, resps, err); e != nil {
		t.Fatalf("alter: %v %s", e, msg)
	}
	rc = describeTopic(t, adm, "altered")
	expectConfig(t, configOf(t, rc, "retention.ms"), "604800000", kmsg.ConfigSourceDefaultConfig)
	expectConfig(t, configOf(t, rc, "cleanup.policy"), "compact", kmsg.ConfigSourceDynamicTopicConfig,
		"cleanup.policy=compact@DYNAMIC_TOPIC_CONFIG", "log.cleanup.policy=delete@DEFAULT_CONFIG")

	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "soon")}, "altered")
	expectAlterError(t, resps, err, kerr.InvalidConfig, "Invalid value soon for configuration retention.ms: Not a number of type LONG")
	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, "altered")
	expectAlterError(t, resps, err, kerr.InvalidConfig, "Can't APPEND to key retention.ms because its type is not LIST.")
	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("no.such.key", "1")}, "altered")
	expectAlterError(t, resps, err, kerr.InvalidConfig, "Unknown topic config name: no.such.key")
	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "1")}, "no-such-topic")
	expectAlterError(t, resps, err, kerr.UnknownTopicOrPartition, "The topic 'no-such-topic' does not exist.")
	resps, err = adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "7")}, "altered")
	if e, _ := alterErr(t, resps, err); e != nil {
		t.Fatalf("validate only: %v", e)
	}
	if c := configOf(t, describeTopic(t, adm, "altered"), "retention.ms"); c.MaybeValue() != "604800000" {
		t.Errorf("validate_only changed retention.ms to %s", c.MaybeValue())
	}

	// The legacy AlterConfigs replaces everything: cleanup.policy goes.
	resps, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("1024")}}, "altered")
	if e, msg := alterErr(t, resps, err); e != nil {
		t.Fatalf("alter state: %v %s", e, msg)
	}
	rc = describeTopic(t, adm, "altered")
	expectConfig(t, configOf(t, rc, "cleanup.policy"), "delete", kmsg.ConfigSourceDefaultConfig, "log.cleanup.policy=delete@DEFAULT_CONFIG")
	if err := produceSized(t, cl, "altered", 4000); !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("produce above the altered max.message.bytes: %v", err)
	}
	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "max.message.bytes"}}, "altered")
	if e, _ := alterErr(t, resps, err); e != nil {
		t.Fatal(e)
	}
	if err := produceSized(t, cl, "altered", 4000); err != nil {
		t.Errorf("produce after deleting max.message.bytes: %v", err)
	}
}

// TestAlterBrokerConfigs: dynamic broker configs at the cluster default and
// per broker, described with their layers, applied to the open logs, kept
// across a restart; read-only keys refused with Kafka's message.
func TestAlterBrokerConfigs(t *testing.T) {
	dir := t.TempDir()
	srv := startBroker(t, dir)
	cl := newClient(t, srv, kgo.ProducerBatchMaxBytes(4<<20), kgo.RecordRetries(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "brokercfg", 1, nil)
	ctx := ctxFor(t)
	id := srv.NodeID()
	set := func(name, value string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: kadm.StringPtr(value)}
	}

	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("message.max.bytes", "1024"), set("log.retention.ms", "3600000")})
	if e, msg := alterErr(t, resps, err); e != nil {
		t.Fatalf("cluster default: %v %s", e, msg)
	}
	resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.retention.bytes", "123456789")}, id)
	if e, msg := alterErr(t, resps, err); e != nil {
		t.Fatalf("per broker: %v %s", e, msg)
	}
	resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("num.partitions", "3")}, id)
	expectAlterError(t, resps, err, kerr.InvalidRequest, "Cannot update these configs dynamically: [num.partitions]")
	resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("listeners", "PLAINTEXT://127.0.0.1:1")})
	expectAlterError(t, resps, err, kerr.InvalidRequest,
		"Cannot update these configs at default cluster level, broker id must be specified: [listeners]")
	resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.segment.bytes", "100")})
	expectAlterError(t, resps, err, kerr.InvalidRequest,
		"Invalid value 100 for configuration log.segment.bytes: Value must be at least 1048576")

	check := func(adm *kadm.Client) {
		t.Helper()
		def := describeBroker(t, adm, "")
		if len(def.Configs) != 2 {
			t.Errorf("cluster default lists %d configs", len(def.Configs))
		}
		expectConfig(t, configOf(t, def, "message.max.bytes"), "1024", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
			"message.max.bytes=1024@DYNAMIC_DEFAULT_BROKER_CONFIG")
		b := describeBroker(t, adm, strconv.Itoa(int(id)), id)
		expectConfig(t, configOf(t, b, "log.retention.ms"), "3600000", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
			"log.retention.ms=3600000@DYNAMIC_DEFAULT_BROKER_CONFIG", "log.retention.hours=168@DEFAULT_CONFIG")
		expectConfig(t, configOf(t, b, "log.retention.bytes"), "123456789", kmsg.ConfigSourceDynamicBrokerConfig,
			"log.retention.bytes=123456789@DYNAMIC_BROKER_CONFIG", "log.retention.bytes=-1@DEFAULT_CONFIG")
		rc := describeTopic(t, adm, "brokercfg")
		expectConfig(t, configOf(t, rc, "max.message.bytes"), "1024", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
			"message.max.bytes=1024@DYNAMIC_DEFAULT_BROKER_CONFIG", "message.max.bytes=1048588@DEFAULT_CONFIG")
		expectConfig(t, configOf(t, rc, "retention.ms"), "3600000", kmsg.ConfigSourceDynamicDefaultBrokerConfig,
			"log.retention.ms=3600000@DYNAMIC_DEFAULT_BROKER_CONFIG", "log.retention.hours=168@DEFAULT_CONFIG")
	}
	check(adm)
	if err := produceSized(t, cl, "brokercfg", 4000); !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("produce above the dynamic message.max.bytes: %v", err)
	}

	cl.Close()
	srv.Close()
	srv = startBroker(t, dir)
	defer srv.Close()
	check(kadm.NewClient(newClient(t, srv)))

	// Deleting the override restores the static default.
	cl = newClient(t, srv, kgo.ProducerBatchMaxBytes(4<<20), kgo.RecordRetries(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm = kadm.NewClient(cl)
	resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "message.max.bytes"}})
	if e, msg := alterErr(t, resps, err); e != nil {
		t.Fatalf("delete: %v %s", e, msg)
	}
	if err := produceSized(t, cl, "brokercfg", 4000); err != nil {
		t.Errorf("produce after deleting the dynamic message.max.bytes: %v", err)
	}
}
