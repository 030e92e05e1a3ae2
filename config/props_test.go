package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestEnvKeyToProperty(t *testing.T) {
	for env, want := range map[string]string{
		"KAFKA_LOG_DIRS":                           "log.dirs",
		"KAFKA_NUM_PARTITIONS":                     "num.partitions",
		"KAFKA_ADVERTISED_LISTENERS":               "advertised.listeners",
		"KAFKA_NODE_ID":                            "node.id",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":   "offsets.topic.replication.factor",
		"KAFKA_LISTENER_NAME_INTERNAL__X___Y_Z":    "listener.name.internal_x-y.z",
		"KAFKA_SOME__UNDERSCORE":                   "some_underscore",
		"KAFKA_SOME___DASH":                        "some-dash",
		"KAFKA_CONFLUENT_SUPPORT_METRICS___ENABLE": "confluent.support.metrics-enable",
	} {
		if got := envKeyToProperty(env); got != want {
			t.Errorf("envKeyToProperty(%s) = %q, want %q", env, got, want)
		}
	}
}

func TestEnvProperties(t *testing.T) {
	got := envProperties([]string{
		"KAFKA_LOG_DIRS=/var/lib/kafka/data",
		"KAFKA_NUM_PARTITIONS=3",
		"KAFKA_LISTENERS=PLAINTEXT://:9092",
		"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://broker:9092",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"KAFKA_OPTS=-Dfoo=bar", // the image's JVM variables are not configs
		"KAFKA_HEAP_OPTS=-Xmx1G",
		"KAFKA_JVM_PERFORMANCE_OPTS=-server",
		"KAFKA_LOG4J_OPTS=x", "KAFKA_JMX_OPTS=x", "KAFKA_GC_LOG_OPTS=x", "KAFKA_DEBUG=y", "KAFKA_HOME=/opt/kafka",
		"KAFKA_VERSION=4.0.0", "KAFKA_LOG4J_ROOT_LOGLEVEL=INFO", "KAFKA_LOG4J_LOGGERS=x", "KAFKA_TOOLS_LOG4J_LOGLEVEL=x",
		"KAFKA_JMX_PORT=9999", "KAFKA_JMX_HOSTNAME=h",
		"CLUSTER_ID=abc", // not KAFKA_
		"PATH=/usr/bin",
		"KAFKA_=ignored",
		"KAFKA_EMPTY=", // an empty value is kept, as the image writes "empty="
		"KAFKA_WITH_EQUALS=a=b",
	})
	want := map[string]string{
		"log.dirs":                       "/var/lib/kafka/data",
		"num.partitions":                 "3",
		"listeners":                      "PLAINTEXT://:9092",
		"advertised.listeners":           "PLAINTEXT://broker:9092",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"empty":                          "",
		"with.equals":                    "a=b",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("envProperties =\n%v\nwant\n%v", got, want)
	}
}

func TestEnvListenersFromAdvertised(t *testing.T) {
	// The Docker image binds the advertised listeners on 0.0.0.0 when KAFKA_LISTENERS is unset.
	got := envProperties([]string{"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://broker:9092,EXTERNAL://example.com:19092"})
	if got["listeners"] != "PLAINTEXT://0.0.0.0:9092,EXTERNAL://0.0.0.0:19092" {
		t.Fatalf("listeners = %q", got["listeners"])
	}
	got = envProperties([]string{"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://broker:9092", "KAFKA_PROCESS_ROLES=controller"})
	if _, ok := got["listeners"]; ok {
		t.Fatalf("a controller-only node got listeners %q", got["listeners"])
	}
	got = envProperties([]string{"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://broker:9092", "KAFKA_LISTENERS=PLAINTEXT://:9092"})
	if got["listeners"] != "PLAINTEXT://:9092" {
		t.Fatalf("explicit listeners replaced: %q", got["listeners"])
	}
}

func TestOverrideProperties(t *testing.T) {
	got := overrideProperties([]string{"a=1", "b=x=y", "c", "d=", "a=2"})
	want := map[string]string{"a": "2", "b": "x=y", "c": "", "d": ""}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("overrideProperties = %v, want %v", got, want)
	}
}

func TestLoadPropertiesPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(file, []byte("from.file=file\nfile.and.env=file\nall.three=file\nnum.partitions=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	props, err := Load(file,
		[]string{"KAFKA_FILE_AND_ENV=env", "KAFKA_ALL_THREE=env", "KAFKA_FROM_ENV=env"},
		[]string{"all.three=override", "from.override=override"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"from.file": "file", "file.and.env": "env", "all.three": "override", "from.env": "env",
		"from.override": "override", "num.partitions": "1",
	}
	if !reflect.DeepEqual(props, want) {
		t.Fatalf("Load = %v, want %v", props, want)
	}

	// No file: environment and overrides only.
	props, err = Load("", []string{"KAFKA_NODE_ID=3"}, nil)
	if err != nil || !reflect.DeepEqual(props, map[string]string{"node.id": "3"}) {
		t.Fatalf("no file: %v, %v", props, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.properties"), nil, nil); !os.IsNotExist(err) {
		t.Fatalf("missing file: err = %v", err)
	}
}
