package config

// Where the broker's properties come from, lowest precedence first:
//
//  1. the server.properties file (Java .properties syntax, as Kafka's Utils.loadProps reads it);
//  2. KAFKA_* environment variables, mapped as the Apache Kafka Docker image does
//     (KafkaDockerWrapper.getServerConfigsFromEnv);
//  3. --override key=value arguments (Kafka's kafka-server-start.sh --override).

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// parseProperties reads Java .properties text as java.util.Properties.load does:
// '#' and '!' comment lines, key and value separated by '=', ':' or whitespace,
// a line ending in an odd number of backslashes continued on the next (whose
// leading whitespace is dropped), and the escapes \t \n \r \f \uXXXX and \x = x.
// Unlike Java, the file is read as UTF-8 (Java assumes ISO-8859-1) and values lose
// their trailing whitespace, which Kafka trims when it parses them anyway. A later
// duplicate key wins.
func parseProperties(r io.Reader) (map[string]string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	lines := strings.Split(text, "\n")

	out := map[string]string{}
	for i := 0; i < len(lines); i++ {
		line := trimLeftSpace(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		start := i + 1 // line number for errors
		for endsWithContinuation(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + trimLeftSpace(lines[i])
		}
		if endsWithContinuation(line) { // a backslash on the last line of the file
			line = line[:len(line)-1]
		}
		key, value := splitProperty(line)
		k, err := unescapeProperty(key)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		v, err := unescapeProperty(value)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		out[k] = v
	}
	return out, nil
}

func isPropSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftSpace(s string) string {
	i := 0
	for i < len(s) && isPropSpace(s[i]) {
		i++
	}
	return s[i:]
}

// endsWithContinuation reports whether s ends in an odd number of backslashes.
func endsWithContinuation(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line (leading whitespace already gone) into its
// still-escaped key and value: the key ends at the first unescaped '=', ':' or
// whitespace; whitespace and at most one '=' or ':' follow before the value.
func splitProperty(line string) (key, value string) {
	keyEnd, valueStart := len(line), len(line)
	hasSep := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // skip the escaped character
			continue
		}
		if c == '=' || c == ':' {
			keyEnd, valueStart, hasSep = i, i+1, true
			break
		}
		if isPropSpace(c) {
			keyEnd, valueStart = i, i+1
			break
		}
	}
	for valueStart < len(line) {
		c := line[valueStart]
		if !isPropSpace(c) {
			if hasSep || (c != '=' && c != ':') {
				break
			}
			hasSep = true
		}
		valueStart++
	}
	return line[:keyEnd], trimRightUnescapedSpace(line[valueStart:])
}

// trimRightUnescapedSpace drops trailing whitespace that is not escaped ("a\ " keeps its space).
func trimRightUnescapedSpace(s string) string {
	end := len(s)
	for end > 0 && isPropSpace(s[end-1]) {
		n := 0
		for j := end - 2; j >= 0 && s[j] == '\\'; j-- {
			n++
		}
		if n%2 == 1 {
			break
		}
		end--
	}
	return s[:end]
}

// errMalformedUnicode is Java's message for a bad \u escape.
var errMalformedUnicode = errors.New(`Malformed \uxxxx encoding.`)

// unescapeProperty is Properties.loadConvert.
func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", errMalformedUnicode
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", errMalformedUnicode
			}
			r := rune(n)
			i += 4
			// A UTF-16 surrogate pair written as two \u escapes.
			if r >= 0xD800 && r < 0xDC00 && i+7 <= len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if lo, err := strconv.ParseUint(s[i+3:i+7], 16, 16); err == nil && lo >= 0xDC00 && lo < 0xE000 {
					r = (r-0xD800)<<10 + (rune(lo) - 0xDC00) + 0x10000
					i += 6
				}
			}
			if !utf8.ValidRune(r) {
				r = utf8.RuneError
			}
			b.WriteRune(r)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

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
		fileProps, err := parseProperties(bufio.NewReader(f))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", configFile, err)
		}
		maps.Copy(props, fileProps)
	}
	maps.Copy(props, envProperties(environ))
	maps.Copy(props, overrideProperties(overrides))
	return props, nil
}
