// Package javaprops reads and writes Java .properties text as
// java.util.Properties does: the broker's server.properties (package
// config) and a log directory's meta.properties (package storage).
package javaprops

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Parse reads Java .properties text as java.util.Properties.load does:
// '#' and '!' comment lines, key and value separated by '=', ':' or whitespace,
// a line ending in an odd number of backslashes continued on the next (whose
// leading whitespace is dropped), and the escapes \t \n \r \f \uXXXX and \x = x.
// Unlike Java, the file is read as UTF-8 (Java assumes ISO-8859-1) and values lose
// their trailing whitespace, which Kafka trims when it parses them anyway. A later
// duplicate key wins.
func Parse(r io.Reader) (map[string]string, error) {
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

// Escape is a value as Properties.store writes it: backslash, '=', ':',
// '#', '!' and a leading space escaped, and \t \n \r \f written as
// escapes; a trailing space is escaped too, as Parse drops unescaped ones.
// Parse reads it back as it was.
func Escape(s string) string {
	if !strings.ContainsAny(s, "\\=:#! \t\n\r\f") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '=', ':', '#', '!':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		case ' ':
			if i == 0 || i == len(s)-1 {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
