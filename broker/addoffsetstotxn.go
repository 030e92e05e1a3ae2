package broker

// AddOffsetsToTxn (key 25); versions: see the registration below. The
// transaction coordinator (coordinator/txn) adds the group's
// __consumer_offsets partition to the transaction; PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH below v2.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.AddOffsetsToTxn, 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	coord := c.srv.txnCoordinator()
	if code := c.transactionDenied(req.TransactionalID, req.Group); code != 0 { // authorize.go
		resp.ErrorCode = code
	} else if coord == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	} else {
		resp.ErrorCode = fencedCode(coord.AddOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group), x.req.Version, 2)
	}
	x.respond(resp)
}
