package broker

// DescribeTransactions (key 65); versions: see the registration below. The
// transaction coordinator describes each transactional id it owns
// (NOT_COORDINATOR for others), as Kafka's KafkaApis answers.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.DescribeTransactions, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	coord := c.srv.txnCoordinator()
	for _, id := range req.TransactionalIDs {
		if !c.authorizeTransactionalID(acl.OpDescribe, id) { // authorize.go
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		if coord == nil {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, kerr.CoordinatorNotAvailable.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st := coord.DescribeTransactions(id)
		// The partitions of topics the principal may not describe are left out.
		st.Topics = slices.DeleteFunc(st.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
			return !c.authorizeTopic(acl.OpDescribe, t.Topic)
		})
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	x.respond(resp)
}
