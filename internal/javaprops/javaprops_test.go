package javaprops

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	const text = "# a comment\r\n" +
		"! another comment\n" +
		"   \n" +
		"plain=value\n" +
		"  indented.key = spaced value  \n" +
		"colon:value2\n" +
		"space.sep   value3\n" +
		"tab.sep\tvalue4\n" +
		"both.sep = : value5\n" + // only the first separator counts; ": value5" is the value
		"empty.value=\n" +
		"key.only\n" +
		"continued = first, \\\n" +
		"     second, \\\n" +
		"\tthird\n" +
		"# a comment ending in a backslash does not continue \\\n" +
		"after.comment=yes\n" +
		"escaped\\=key\\:x = v\n" +
		"escapes=tab\\there\\nnl\\\\back\\u0041\\u00e9\\q\n" +
		"surrogates=\\ud83d\\ude00\n" +
		"kept.trailing=a\\ \n" +
		"dup=1\n" +
		"dup=2\n" +
		"listeners=PLAINTEXT://:9092,CONTROLLER://:9093\n" +
		"utf8=héllo\n" +
		"last.line.continued=end\\"
	got, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"plain":               "value",
		"indented.key":        "spaced value",
		"colon":               "value2",
		"space.sep":           "value3",
		"tab.sep":             "value4",
		"both.sep":            ": value5",
		"empty.value":         "",
		"key.only":            "",
		"continued":           "first, second, third",
		"after.comment":       "yes",
		"escaped=key:x":       "v",
		"escapes":             "tab\there\nnl\\backAéq",
		"surrogates":          "😀",
		"kept.trailing":       "a ",
		"dup":                 "2",
		"listeners":           "PLAINTEXT://:9092,CONTROLLER://:9093",
		"utf8":                "héllo",
		"last.line.continued": "end",
	}
	if !reflect.DeepEqual(got, want) {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%q = %q, want %q", k, got[k], v)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected key %q = %q", k, got[k])
			}
		}
	}

	if _, err := Parse(strings.NewReader("a=\\u12\n")); err == nil || !strings.Contains(err.Error(), "Malformed \\uxxxx encoding.") {
		t.Fatalf("bad \\u escape: err = %v", err)
	}
	if _, err := Parse(strings.NewReader("ok=1\na=\\uzzzz\n")); err == nil || !strings.HasPrefix(err.Error(), "line 2:") {
		t.Fatalf("bad \\u escape: err = %v", err)
	}
}

// TestEscapeRoundTrip: what Escape writes, Parse reads back unchanged.
func TestEscapeRoundTrip(t *testing.T) {
	for _, v := range []string{"", "plain", "MkU3OEVBNTcwNTJENDM2Qg", " lead", "trail ", "a=b:c#d!e\\f", "tab\tnl\nret\rff\f", "in side"} {
		got, err := Parse(strings.NewReader("k=" + Escape(v) + "\n"))
		if err != nil || got["k"] != v {
			t.Errorf("Escape(%q) = %q, read back as %q (%v)", v, Escape(v), got["k"], err)
		}
	}
}
