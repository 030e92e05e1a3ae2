package config

import (
	"slices"
	"testing"
)

// TestJavaSetString: Kafka prints sets of config names in java.util.HashSet
// order; these are the orders Kafka 4.4 printed.
func TestJavaSetString(t *testing.T) {
	if got := javaSetString([]string{"log.dirs", "num.partitions"}, 2*4/3+1); got != "[num.partitions, log.dirs]" {
		t.Errorf("got %s", got)
	}
	if got := javaSetString([]string{"listeners"}, 0); got != "[listeners]" {
		t.Errorf("got %s", got)
	}
}

func TestJavaDouble(t *testing.T) {
	for in, want := range map[float64]string{
		0.5: "0.5", 1: "1.0", 0.9: "0.9", 1.7976931348623157e308: "1.7976931348623157E308",
		1e7: "1.0E7", 1234567: "1234567.0", 0.001: "0.001", 0.0001: "1.0E-4", -2.5: "-2.5",
	} {
		if got := javaDouble(in); got != want {
			t.Errorf("javaDouble(%v) = %s, want %s", in, got, want)
		}
	}
}

func TestRenderValue(t *testing.T) {
	for _, c := range []struct {
		raw  string
		typ  configType
		want string
	}{
		{" compact, delete ", typeList, "compact,delete"},
		{"TRUE", typeBoolean, "true"},
		{" 0010", typeLong, "10"},
		{"0.50", typeDouble, "0.5"},
		{"abc", typeInt, "abc"},
		{" x ", typeString, "x"},
	} {
		if got := renderValue(c.raw, c.typ); got != c.want {
			t.Errorf("renderValue(%q, %s) = %q, want %q", c.raw, typeName(c.typ), got, c.want)
		}
	}
}

func TestJavaSplit(t *testing.T) {
	for in, want := range map[string][]string{"": {""}, "a,b,": {"a", "b"}, ",a": {"", "a"}, ",": {}, "a": {"a"}} {
		if got := JavaSplit(in); !slices.Equal(got, want) {
			t.Errorf("JavaSplit(%q) = %q, want %q", in, got, want)
		}
	}
}
