package config

// Where the broker's properties come from, lowest precedence first:
//
//  1. the server.properties file (Java .properties syntax, as Kafka's Utils.loadProps reads it);
//  2. KAFKA_* environment variables, mapped as the Apache Kafka Docker image does
//     (KafkaDockerWrapper.getServerConfigsFromEnv);
//  3. --override key=value arguments (Kafka's kafka-server-start.sh --override).

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"regexp"
	"strings"

	"github.com/strait/strait/internal/javaprops"
)

// excludedEnv are the KAFKA_* variables of the Docker image that are not broker
// configs (KafkaDockerWrapper's ExcludeServerPropsEnv, plus the launch scripts'
// own KAFKA_JMX_PORT, KAFKA_DEBUG and KAFKA_HOME).
var excludedEnv = map[string]bool{
	"KAFKA_VERSION":              true,
	"KAFKA_HEAP_OPTS":            true,
	"KAFKA_LOG4J_OPTS":           true,
	"KAFKA_OPTS":                 true,
	"KAFKA_JMX_OPTS":             true,
	"KAFKA_JVM_PERFORMANCE_OPTS": true,
	"KAFKA_GC_LOG_OPTS":          true,
	"KAFKA_LOG4J_ROOT_LOGLEVEL":  true,
	"KAFKA_LOG4J_LOGGERS":        true,
	"KAFKA_TOOLS_LOG4J_LOGLEVEL": true,
	"KAFKA_JMX_HOSTNAME":         true,
	"KAFKA_JMX_PORT":             true,
	"KAFKA_DEBUG":                true,
	"KAFKA_HOME":                 true,
}

// envKeyToProperty maps KAFKA_LOG_DIRS to log.dirs the Docker image's way: strip
// KAFKA_, lower-case, then '_' -> '.', and of the resulting runs "..." -> '-' and
// ".." -> '_' (so ___ is a dash and __ an underscore).
func envKeyToProperty(env string) string {
	k := strings.ToLower(strings.TrimPrefix(env, "KAFKA_"))
	k = strings.ReplaceAll(k, "_", ".")
	k = strings.ReplaceAll(k, "...", "-")
	return strings.ReplaceAll(k, "..", "_")
}

// advertisedHostPattern is the Docker image's sed 's|://[^:]*:|://0.0.0.0:|g'.
var advertisedHostPattern = regexp.MustCompile(`://[^:]*:`)

// envProperties returns the properties the KAFKA_* variables of environ (as
// os.Environ gives them) set. As the Docker image's configure script does, when
// KAFKA_ADVERTISED_LISTENERS is set but KAFKA_LISTENERS is not (and the node is
// not a controller only), listeners are the advertised ones bound to 0.0.0.0.
func envProperties(environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			env[k] = v
		}
	}
	out := map[string]string{}
	for k, v := range env {
		if !strings.HasPrefix(k, "KAFKA_") || excludedEnv[k] || len(k) == len("KAFKA_") {
			continue
		}
		out[envKeyToProperty(k)] = v
	}
	adv := env["KAFKA_ADVERTISED_LISTENERS"]
	if env["KAFKA_LISTENERS"] == "" && adv != "" && env["KAFKA_PROCESS_ROLES"] != "controller" {
		out["listeners"] = advertisedHostPattern.ReplaceAllString(adv, "://0.0.0.0:")
	}
	return out
}

// overrideProperties parses --override arguments as Kafka's
// CommandLineUtils.parseKeyValueArgs: split at the first '='; no '=' means an
// empty value.
func overrideProperties(overrides []string) map[string]string {
	out := map[string]string{}
	for _, o := range overrides {
		k, v, _ := strings.Cut(o, "=")
		out[k] = v
	}
	return out
}

// Load reads the broker's properties: the file (if any), then the
// KAFKA_* variables of environ, then the --override arguments, later sources
// winning. Parse turns them into a Config.
func Load(configFile string, environ, overrides []string) (map[string]string, error) {
	props := map[string]string{}
	if configFile != "" {
		f, err := os.Open(configFile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		fileProps, err := javaprops.Parse(bufio.NewReader(f))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", configFile, err)
		}
		maps.Copy(props, fileProps)
	}
	maps.Copy(props, envProperties(environ))
	maps.Copy(props, overrideProperties(overrides))
	return props, nil
}
