package broker

// ListTransactions (key 66); versions: see the registration below. The
// transactional ids this coordinator owns, filtered by state, producer id
// and (v1) minimum running time, as Kafka's KafkaApis answers.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	x.respond(coord.ListTransactions(req))
}
