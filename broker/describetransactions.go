package broker

// DescribeTransactions (key 65); versions: see the registration below. The
// transaction coordinator describes each transactional id it owns
// (NOT_COORDINATOR for others), as Kafka's KafkaApis answers.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeTransactions, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	coord := c.srv.txnCoordinator()
	for _, id := range req.TransactionalIDs {
		if coord == nil {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, kerr.CoordinatorNotAvailable.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		resp.TransactionStates = append(resp.TransactionStates, coord.DescribeTransactions(id))
	}
	x.respond(resp)
}
