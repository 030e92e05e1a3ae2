package reference

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// quotaOutcome is what a client sees of an AlterClientQuotas or
// DescribeClientQuotas: codes, messages and entries, in a stable order.
func alterOutcome(r *kmsg.AlterClientQuotasResponse) []string {
	var out []string
	for _, e := range r.Entries {
		msg := ""
		if e.ErrorMessage != nil {
			msg = *e.ErrorMessage
		}
		out = append(out, fmt.Sprintf("%s code=%d msg=%q", entityString(e.Entity), e.ErrorCode, msg))
	}
	sort.Strings(out)
	return out
}

func entityString[T kmsg.AlterClientQuotasResponseEntryEntity | kmsg.DescribeClientQuotasResponseEntryEntity](es []T) string {
	var parts []string
	for _, e := range es {
		var typ string
		var name *string
		switch v := any(e).(type) {
		case kmsg.AlterClientQuotasResponseEntryEntity:
			typ, name = v.Type, v.Name
		case kmsg.DescribeClientQuotasResponseEntryEntity:
			typ, name = v.Type, v.Name
		}
		n := "<default>"
		if name != nil {
			n = *name
		}
		parts = append(parts, typ+"="+n)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func describeOutcome(r *kmsg.DescribeClientQuotasResponse) []string {
	msg := ""
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	out := []string{fmt.Sprintf("code=%d msg=%q", r.ErrorCode, msg)}
	for _, e := range r.Entries {
		var vals []string
		for _, v := range e.Values {
			vals = append(vals, fmt.Sprintf("%s=%v", v.Key, v.Value))
		}
		sort.Strings(vals)
		out = append(out, entityString(e.Entity)+" "+strings.Join(vals, ","))
	}
	sort.Strings(out[1:])
	return out
}

// TestClientQuotasMatchKafka: the same AlterClientQuotas requests (valid,
// refused by Kafka's validation, validate-only) and DescribeClientQuotas
// filters against Kafka 4.4 and Strait give the same codes, messages and
// entries.
func TestClientQuotasMatchKafka(t *testing.T) {
	if os.Getenv("STRAIT_KAFKA_REFERENCE") != "1" {
		t.Skip("needs Java and Maven: run with STRAIT_KAFKA_REFERENCE=1 (make compat-reference)")
	}
	brokers := []*broker{startKafka(t), startStrait(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := func(v string) *string { return &v }
	ent := func(kv ...*string) []kmsg.AlterClientQuotasRequestEntryEntity {
		var out []kmsg.AlterClientQuotasRequestEntryEntity
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, kmsg.AlterClientQuotasRequestEntryEntity{Type: *kv[i], Name: kv[i+1]})
		}
		return out
	}
	op := func(key string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
		return kmsg.AlterClientQuotasRequestEntryOp{Key: key, Value: v}
	}
	user, client, ip := s("user"), s("client-id"), s("ip")
	alters := []struct {
		validateOnly bool
		entries      []kmsg.AlterClientQuotasRequestEntry
	}{
		{false, []kmsg.AlterClientQuotasRequestEntry{
			{Entity: ent(user, s("alice")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 1048576)}},
			{Entity: ent(user, nil), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("consumer_byte_rate", 2048)}},
			{Entity: ent(user, s("alice"), client, s("app")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("request_percentage", 12.5)}},
			{Entity: ent(client, nil), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("controller_mutation_rate", 3)}},
			{Entity: ent(ip, s("127.0.0.2")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 10)}},
			{Entity: ent(ip, nil), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 100)}},
		}},
		{false, []kmsg.AlterClientQuotasRequestEntry{
			{Entity: ent(user, s("b1")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("bogus", 1)}},
			{Entity: ent(user, s("b2")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 1.5)}},
			{Entity: ent(user, s("b3")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 0)}},
			{Entity: ent(user, s("b4")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1)}},
			{Entity: ent(ip, s("127.0.0.3")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 3e9)}},
			{Entity: ent(ip, s("127.0.0.4"), user, s("x")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("connection_creation_rate", 1)}},
			{Entity: ent(s("group"), s("g")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 1)}},
			{Entity: ent(user, s("")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 1)}},
			{Entity: ent(user, s("b5")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 1), op("producer_byte_rate", 2)}},
			{Entity: ent(user, s("b6")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("request_percentage", 0.25)}},
			{Entity: ent(user, s("b6")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("consumer_byte_rate", 5)}},
			{Entity: nil, Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 1)}},
		}},
		{true, []kmsg.AlterClientQuotasRequestEntry{
			{Entity: ent(user, s("v1")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{op("producer_byte_rate", 5)}},
		}},
		{false, []kmsg.AlterClientQuotasRequestEntry{
			{Entity: ent(user, s("alice")), Ops: []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Remove: true}, {Key: "consumer_byte_rate", Remove: true}}},
		}},
	}
	comp := func(typ string, mt int8, match *string) kmsg.DescribeClientQuotasRequestComponent {
		return kmsg.DescribeClientQuotasRequestComponent{EntityType: typ, MatchType: kmsg.QuotasMatchType(mt), Match: match}
	}
	describes := []struct {
		strict bool
		comps  []kmsg.DescribeClientQuotasRequestComponent
	}{
		{false, nil},
		{true, nil},
		{true, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 2, nil)}},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 2, nil)}},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, s("alice"))}},
		{true, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 1, nil)}},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", 1, nil)}},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("ip", 2, nil)}},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("ip", 2, nil), comp("user", 2, nil)}},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("topic", 2, nil)}},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, nil)}},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 1, s("x"))}},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 2, nil), comp("user", 2, nil)}},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("", 2, nil)}},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 7, nil)}},
	}
	describeAll := func(b *broker) [][]string {
		var out [][]string
		for _, d := range describes {
			req := kmsg.NewPtrDescribeClientQuotasRequest()
			req.Strict, req.Components = d.strict, d.comps
			resp, err := req.RequestWith(ctx, b.cl)
			if err != nil {
				t.Fatalf("%s: describe: %v", b.name, err)
			}
			out = append(out, describeOutcome(resp))
		}
		return out
	}
	for i, a := range alters {
		var got [2][]string
		for j, b := range brokers {
			req := kmsg.NewPtrAlterClientQuotasRequest()
			req.ValidateOnly, req.Entries = a.validateOnly, a.entries
			resp, err := req.RequestWith(ctx, b.cl)
			if err != nil {
				t.Fatalf("%s: alter %d: %v", b.name, i, err)
			}
			got[j] = alterOutcome(resp)
		}
		t.Logf("alter %d, Kafka: %q", i, got[0])
		if !reflect.DeepEqual(got[0], got[1]) {
			t.Errorf("alter %d:\n kafka:  %q\n strait: %q", i, got[0], got[1])
		}
		// Kafka's brokers learn the change from the metadata log a moment
		// after the controller answers: compare once both agree or time
		// runs out.
		var desc [2][][]string
		for k := 0; k < 50; k++ {
			desc[0], desc[1] = describeAll(brokers[0]), describeAll(brokers[1])
			if reflect.DeepEqual(desc[0], desc[1]) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		for k := range describes {
			if !reflect.DeepEqual(desc[0][k], desc[1][k]) {
				t.Errorf("after alter %d, describe %d (%+v):\n kafka:  %q\n strait: %q", i, k, describes[k], desc[0][k], desc[1][k])
			}
		}
	}
}
