package main

// The authorizer's cost (compare -acls N): every broker of a secured run
// gets Kafka's StandardAuthorizer and N ACLs, so that the SASL scenarios'
// Produce, Fetch, Metadata and ListOffsets are authorized against a set of
// realistic size, and the run's figures set beside those of a run without
// -acls show what authorization costs on the produce and fetch path.
// User:ANONYMOUS (the PLAINTEXT listener, which the harness sets up topics,
// users and ACLs over, and which Kafka's brokers and controller use among
// themselves) is the only super user; the SASL user is authorized by its
// ACLs like any client.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authorizerProperties are the broker settings of an -acls run (Kafka's
// keys, the same for Kafka and Strait).
func authorizerProperties() string {
	return "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n" +
		"super.users=User:ANONYMOUS\n" +
		"allow.everyone.if.no.acl.found=false\n"
}

// benchACLs are n bindings: the two the SASL scenarios need (User:bench may
// READ and WRITE, hence DESCRIBE, every topic named bench-*, the harness's
// topic names; its consumers use no group and its idempotent producers
// rely on WRITE on a topic), and n-2 on other resources, spread over the
// kinds a cluster holds: literal topics whose names sort beside the bench
// topics, prefixed topics for User:bench, groups, other principals'
// prefixes, transactional ids, and DENY bindings of other principals.
func benchACLs(n int) []kmsg.CreateACLsRequestCreation {
	mk := func(rt kmsg.ACLResourceType, name string, pat kmsg.ACLResourcePatternType, principal string,
		op kmsg.ACLOperation, perm kmsg.ACLPermissionType) kmsg.CreateACLsRequestCreation {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, pat
		c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, perm
		return c
	}
	bench := "User:" + benchUser
	out := []kmsg.CreateACLsRequestCreation{
		mk(kmsg.ACLResourceTypeTopic, "bench-", kmsg.ACLResourcePatternTypePrefixed, bench, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow),
		mk(kmsg.ACLResourceTypeTopic, "bench-", kmsg.ACLResourcePatternTypePrefixed, bench, kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow),
	}
	for i := 0; len(out) < n; i++ {
		other := fmt.Sprintf("User:app-%03d", i%100)
		var c kmsg.CreateACLsRequestCreation
		switch i % 6 {
		case 0:
			c = mk(kmsg.ACLResourceTypeTopic, fmt.Sprintf("bench-unrelated-%04d", i), kmsg.ACLResourcePatternTypeLiteral, other, kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow)
		case 1:
			c = mk(kmsg.ACLResourceTypeTopic, fmt.Sprintf("team-%04d-", i), kmsg.ACLResourcePatternTypePrefixed, bench, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow)
		case 2:
			c = mk(kmsg.ACLResourceTypeGroup, fmt.Sprintf("group-%04d", i), kmsg.ACLResourcePatternTypeLiteral, other, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow)
		case 3:
			c = mk(kmsg.ACLResourceTypeTopic, fmt.Sprintf("bench-x%04d-", i), kmsg.ACLResourcePatternTypePrefixed, other, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow)
		case 4:
			c = mk(kmsg.ACLResourceTypeTransactionalId, fmt.Sprintf("txn-%04d", i), kmsg.ACLResourcePatternTypeLiteral, other, kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow)
		case 5:
			c = mk(kmsg.ACLResourceTypeTopic, fmt.Sprintf("orders-%04d", i), kmsg.ACLResourcePatternTypeLiteral, other, kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeDeny)
		}
		out = append(out, c)
	}
	return out[:n]
}

// createBenchACLs creates benchACLs(n) over addr (the PLAINTEXT listener,
// a super user's) and waits until DescribeAcls lists them all: Kafka
// applies them from its metadata log a moment after CreateAcls returns.
func createBenchACLs(ctx context.Context, addr string, n int) error {
	cl := mustClient([]string{addr})
	defer cl.Close()
	all := benchACLs(n)
	for len(all) > 0 {
		chunk := all[:min(len(all), 200)]
		all = all[len(chunk):]
		req := kmsg.NewPtrCreateACLsRequest()
		req.Creations = chunk
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("CreateAcls: %w", err)
		}
		for _, r := range resp.Results {
			if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
				msg := ""
				if r.ErrorMessage != nil {
					msg = *r.ErrorMessage
				}
				return fmt.Errorf("CreateAcls: %w %s", err, msg)
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(ctx, cl)
		got := 0
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
			for _, r := range resp.Resources {
				got += len(r.ACLs)
			}
		}
		if err == nil && got == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("DescribeAcls lists %d of %d ACLs after 30 s (%v)", got, n, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
