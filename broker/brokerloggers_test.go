package broker_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
)

// TestBrokerLoggerLevels changes the broker's log level as kafka-configs
// --entity-type broker-loggers does, with RuntimeLoggerManager's checks and
// messages for what it refuses.
func TestBrokerLoggerLevels(t *testing.T) {
	cfg, _, err := config.Parse(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	level := new(slog.LevelVar)
	cfg.LogLevel = level
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
	srv, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	alter := func(name string, validateOnly bool, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeBrokerLogger, name, ops
		req.Resources = append(req.Resources, r)
		// To the broker itself: kgo would route by the resource name.
		raw, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp := raw.(*kmsg.IncrementalAlterConfigsResponse)
		msg := ""
		if m := resp.Resources[0].ErrorMessage; m != nil {
			msg = *m
		}
		return resp.Resources[0].ErrorCode, msg
	}
	op := func(name string, o kmsg.IncrementalAlterConfigOp, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = name, o, kmsg.StringPtr(value)
		return c
	}
	describe := func() string {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "1"
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) != 1 {
			t.Fatalf("describe: %v %+v", err, resp)
		}
		return *resp.Resources[0].Configs[0].Value
	}

	if got := describe(); got != "INFO" {
		t.Fatalf("level at start %q", got)
	}
	if code, msg := alter("1", true, op("root", kmsg.IncrementalAlterConfigOpSet, "DEBUG")); code != 0 || level.Level() != slog.LevelInfo {
		t.Fatalf("validate_only: %d %q, level %v", code, msg, level.Level())
	}
	if code, msg := alter("1", false, op("root", kmsg.IncrementalAlterConfigOpSet, "DEBUG")); code != 0 {
		t.Fatalf("set DEBUG: %d %q", code, msg)
	}
	if level.Level() != slog.LevelDebug || describe() != "DEBUG" {
		t.Fatalf("after set DEBUG: level %v, described %q", level.Level(), describe())
	}
	if code, _ := alter("1", false, op("root", kmsg.IncrementalAlterConfigOpSet, "WARN")); code != 0 || describe() != "WARN" {
		t.Fatalf("set WARN: %d, described %q", code, describe())
	}
	for _, c := range []struct {
		name string
		op   kmsg.IncrementalAlterConfigsRequestResourceConfig
		code int16
		msg  string
	}{
		{"1", op("kafka.server", kmsg.IncrementalAlterConfigOpSet, "DEBUG"), kerr.InvalidConfig.Code, "Logger kafka.server does not exist!"},
		{"1", op("root", kmsg.IncrementalAlterConfigOpSet, "LOUD"), kerr.InvalidConfig.Code,
			"Cannot set the log level of root to LOUD as it is not a supported log level. Valid log levels are ALL, DEBUG, ERROR, FATAL, INFO, OFF, TRACE, WARN"},
		{"1", op("root", kmsg.IncrementalAlterConfigOpDelete, ""), kerr.InvalidRequest.Code, "Removing the log level of the root logger is not allowed"},
		{"1", op("root", kmsg.IncrementalAlterConfigOpAppend, "DEBUG"), kerr.InvalidRequest.Code, "APPEND operation is not allowed for the BROKER_LOGGER resource"},
		{"2", op("root", kmsg.IncrementalAlterConfigOpSet, "DEBUG"), kerr.InvalidRequest.Code, "Unexpected node id. Expected 1, but received 2"},
		{"x", op("root", kmsg.IncrementalAlterConfigOpSet, "DEBUG"), kerr.InvalidRequest.Code, "Node id must be an integer, but it is: x"},
	} {
		if code, msg := alter(c.name, false, c.op); code != c.code || msg != c.msg {
			t.Errorf("%s %s %v: %d %q, want %d %q", c.name, c.op.Name, c.op.Op, code, msg, c.code, c.msg)
		}
	}
	if describe() != "WARN" {
		t.Fatalf("a refused change moved the level to %q", describe())
	}

	// Legacy AlterConfigs does not take BROKER_LOGGER, as in Kafka.
	req := kmsg.NewPtrAlterConfigsRequest()
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "1"
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "root", kmsg.StringPtr("DEBUG")
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Resources[0].ErrorCode != kerr.InvalidRequest.Code || *resp.Resources[0].ErrorMessage != "Unknown resource type 8" {
		t.Fatalf("legacy AlterConfigs: %v %+v", err, resp)
	}
}
