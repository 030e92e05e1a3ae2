package broker

// ListTransactions (key 66); versions: see the registration below. The
// transactional ids this coordinator owns, filtered by state, producer id,
// (v1) minimum running time and (v2, KIP-1152) a regular expression the
// whole transactional id must match (RE2J in Kafka, Go's RE2 here; an
// invalid one is INVALID_REGULAR_EXPRESSION), as Kafka's KafkaApis answers.

import (
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.ListTransactions, 0, 2, handleListTransactions) }

func handleListTransactions(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ListTransactionsRequest)
	var pattern *regexp.Regexp
	if p := req.TransactionalIDPattern; x.req.Version >= 2 && p != nil && *p != "" {
		re, err := regexp.Compile("^(?:" + *p + ")$")
		if err != nil {
			resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			x.respond(resp)
			return
		}
		pattern = re
	}
	coord := c.srv.txnCoordinator()
	if coord == nil {
		resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		x.respond(resp)
		return
	}
	resp := coord.ListTransactions(req)
	// Only the transactional ids the principal may describe (authorize.go)
	// and the pattern matches.
	resp.TransactionStates = slices.DeleteFunc(resp.TransactionStates, func(t kmsg.ListTransactionsResponseTransactionState) bool {
		return pattern != nil && !pattern.MatchString(t.TransactionalID) ||
			!c.authorizeTransactionalID(acl.OpDescribe, t.TransactionalID)
	})
	x.respond(resp)
}
