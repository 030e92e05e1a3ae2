package broker

// EndTxn (key 26); versions: see the registration below. The transaction
// coordinator (coordinator/txn) commits or aborts; v5 is transaction version
// 2 (the epoch bumps and the response carries the producer id and epoch to
// go on with). PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/coordinator/txn"
)

func init() { register(kmsg.EndTxn, 0, 5, handleEndTxn) }

func handleEndTxn(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if code := c.transactionDenied(req.TransactionalID, ""); code != 0 { // authorize.go
		resp.ErrorCode = code
		x.respond(resp)
		return
	}
	coord := c.srv.txnCoordinator()
	if coord == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		x.respond(resp)
		return
	}
	// EndTxn v5 is how a client says it runs transaction version 2.
	tv := txn.TV0
	if x.req.Version > 4 {
		tv = txn.TV2
	}
	code, pid, epoch := coord.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, tv)
	resp.ErrorCode = fencedCode(code, x.req.Version, 2)
	resp.ProducerID, resp.ProducerEpoch = pid, epoch
	x.respond(resp)
}
