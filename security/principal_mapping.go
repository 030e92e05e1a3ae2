package security

// The principal of a TLS client certificate, as Kafka's
// DefaultKafkaPrincipalBuilder makes it: the subject distinguished name as
// Java's X500Principal.getName() writes it (RFC 2253), mapped by
// ssl.principal.mapping.rules (SslPrincipalMapper).

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf16"

	"github.com/strait/strait/config"
)

// principalMapper is SslPrincipalMapper: the first rule that applies gives
// the name.
type principalMapper struct {
	rules []config.PrincipalMappingRule
}

func newPrincipalMapper(t *config.TLS) (*principalMapper, error) {
	rules := t.PrincipalMappingRules
	if strings.TrimSpace(rules) == "" && t.Keys == nil {
		rules = "DEFAULT"
	}
	r, err := config.ParsePrincipalMappingRules(t.Key("ssl.principal.mapping.rules"), rules)
	if err != nil {
		return nil, err
	}
	return &principalMapper{rules: r}, nil
}

// name maps a distinguished name.
func (m *principalMapper) name(dn string) (string, error) {
	for _, r := range m.rules {
		if r.Default {
			return dn, nil
		}
		if !r.Whole.MatchString(dn) {
			continue
		}
		out, err := replaceAllJava(r, dn)
		if err != nil {
			return "", err
		}
		if r.Lower {
			out = strings.ToLower(out)
		} else if r.Upper {
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", errors.New("No rules apply to " + dn + ", rules " + rulesString(m.rules))
}

func rulesString(rules []config.PrincipalMappingRule) string {
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = r.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// replaceAllJava is Java's String.replaceAll(pattern, replacement) with
// Kafka's escaping of back references to groups the pattern lacks (they
// are literal text).
func replaceAllJava(r config.PrincipalMappingRule, s string) (string, error) {
	groups := r.Pattern.NumSubexp()
	var b strings.Builder
	last := 0
	for _, m := range r.Pattern.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(s[last:m[0]])
		if err := expandJava(&b, r.Replacement, s, m, groups); err != nil {
			return "", err
		}
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// expandJava is Matcher.appendReplacement: \x is x, $n the group n (as
// many digits as make a group that exists).
func expandJava(b *strings.Builder, repl, s string, m []int, groups int) error {
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '\\':
			i++
			if i == len(repl) {
				return errors.New("character to be escaped is missing")
			}
			b.WriteByte(repl[i])
		case c == '$':
			if i+1 == len(repl) {
				return errors.New("Illegal group reference: group index is missing")
			}
			d := repl[i+1]
			if d < '0' || d > '9' {
				return errors.New("Illegal group reference")
			}
			ref := int(d - '0')
			if ref > groups {
				if groups == 0 {
					return errors.New("No group " + string(d))
				}
				// Kafka escapes a reference to a missing group: literal.
				b.WriteByte('$')
				continue
			}
			i++
			for i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9' {
				next := ref*10 + int(repl[i+1]-'0')
				if next > groups {
					break
				}
				ref = next
				i++
			}
			if m[2*ref] >= 0 {
				b.WriteString(s[m[2*ref]:m[2*ref+1]])
			}
		default:
			b.WriteByte(c)
		}
	}
	return nil
}

// rfc2253Keywords are the attribute types X500Principal.getName() writes
// by name; it writes every other as its OID with a #hex value.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

type rawAVA struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// distinguishedName is the certificate's subject as Java's
// X500Principal.getName() (RFC 2253) writes it: the RDNs last first,
// multi-valued ones joined by +, special characters escaped.
func distinguishedName(c *x509.Certificate) (string, error) {
	var rdns []asn1.RawValue
	if rest, err := asn1.Unmarshal(c.RawSubject, &rdns); err != nil || len(rest) > 0 {
		return "", errors.New("malformed certificate subject")
	}
	parts := make([]string, 0, len(rdns))
	for i := len(rdns) - 1; i >= 0; i-- {
		var avas []rawAVA
		if _, err := asn1.UnmarshalWithParams(rdns[i].FullBytes, &avas, "set"); err != nil {
			return "", errors.New("malformed certificate subject")
		}
		var rdn []string
		for _, a := range avas {
			rdn = append(rdn, avaString(a))
		}
		parts = append(parts, strings.Join(rdn, "+"))
	}
	return strings.Join(parts, ","), nil
}

func avaString(a rawAVA) string {
	oid := a.Type.String()
	kw, known := rfc2253Keywords[oid]
	s, isString := derString(a.Value)
	if !known || !isString {
		label := kw
		if !known {
			label = oid
		}
		return label + "=#" + hex.EncodeToString(a.Value.FullBytes)
	}
	return kw + "=" + escapeRFC2253(s)
}

// derString decodes the string types Java's AVA treats as strings.
func derString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagPrintableString, asn1.TagIA5String, asn1.TagUTF8String:
		return string(v.Bytes), true
	case asn1.TagT61String, asn1.TagGeneralString: // Java reads them as ISO-8859-1
		r := make([]rune, len(v.Bytes))
		for i, c := range v.Bytes {
			r[i] = rune(c)
		}
		return string(r), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}

// escapeRFC2253 is AVA.toRFC2253String's escaping: ,=+<>#;"\ with a
// backslash, NUL as \00, and leading and trailing spaces (and CRs).
func escapeRFC2253(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == 0:
			b.WriteString(`\00`)
		default:
			b.WriteRune(r)
		}
	}
	e := b.String()
	lead := 0
	for lead < len(e) && (e[lead] == ' ' || e[lead] == '\r') {
		lead++
	}
	trail := len(e) - 1
	for trail >= 0 && (e[trail] == ' ' || e[trail] == '\r') {
		trail--
	}
	if lead == 0 && trail == len(e)-1 {
		return e
	}
	var out strings.Builder
	for i := 0; i < len(e); i++ {
		if i < lead || i > trail {
			out.WriteByte('\\')
		}
		out.WriteByte(e[i])
	}
	return out.String()
}
