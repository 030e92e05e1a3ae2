package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// benchACLs(n) is n distinct bindings of which only the first two concern
// User:bench on the harness's topics (bench-NN-<scenario>), so the
// scenarios are authorized by those two alone, over n in all.
func TestBenchACLs(t *testing.T) {
	for _, n := range []int{2, 3, 1000} {
		bs := benchACLs(n)
		if len(bs) != n {
			t.Fatalf("benchACLs(%d): %d bindings", n, len(bs))
		}
		seen := map[string]bool{}
		for i, b := range bs {
			key := fmt.Sprintf("%v/%s/%v/%s/%s/%v/%v", b.ResourceType, b.ResourceName, b.ResourcePatternType, b.Principal, b.Host, b.Operation, b.PermissionType)
			if seen[key] {
				t.Fatalf("benchACLs(%d): binding %d repeated: %s", n, i, key)
			}
			seen[key] = true
			matches := b.ResourceType == kmsg.ACLResourceTypeTopic &&
				(b.ResourceName == "bench-07-1kb-p6" || b.ResourcePatternType == kmsg.ACLResourcePatternTypePrefixed && strings.HasPrefix("bench-07-1kb-p6", b.ResourceName))
			if got, want := matches && b.Principal == "User:"+benchUser, i < 2; got != want {
				t.Errorf("benchACLs(%d)[%d] %s: applies to User:bench on bench-07-1kb-p6: %v, want %v", n, i, key, got, want)
			}
		}
	}
}
