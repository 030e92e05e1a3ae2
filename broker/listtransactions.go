package broker

// ListTransactions (key 66); versions: see the registration below. The
// transactional ids this coordinator owns, filtered by state, producer id
// and (v1) minimum running time, as Kafka's KafkaApis answers.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.ListTransactions, 0, 1, handleListTransactions) }

func handleListTransactions(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ListTransactionsRequest)
	coord := c.srv.txnCoordinator()
	if coord == nil {
		resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		x.respond(resp)
		return
	}
	resp := coord.ListTransactions(req)
	// Only the transactional ids the principal may describe (authorize.go).
	resp.TransactionStates = slices.DeleteFunc(resp.TransactionStates, func(t kmsg.ListTransactionsResponseTransactionState) bool {
		return !c.authorizeTransactionalID(acl.OpDescribe, t.TransactionalID)
	})
	x.respond(resp)
}
