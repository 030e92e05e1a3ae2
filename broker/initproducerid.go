package broker

// InitProducerId (key 22); versions: see the registration below.
//
// Idempotent producers (transactional_id null) get a new producer id at
// epoch 0, as Kafka's TransactionCoordinator.handleInitProducerId answers
// them: blindly, whatever producer_id and producer_epoch the request
// carries (v3+, KIP-360: a producer that lost track of its sequences asks
// again and starts over with a fresh id; Kafka bumps epochs only for
// transactional ids). The ids come from a block of 1000 that the controller
// reserves for this broker in etcd (controller.AllocateProducerIDBlock),
// fetched when the first producer asks and again when the block is used up,
// so no two brokers hand out the same id.
//
// Errors, in Kafka's order: a producer_id of -1 with an epoch other than -1
// or the reverse is INVALID_REQUEST. A transactional id goes to the
// transaction coordinator (coordinator/txn: an empty id is INVALID_REQUEST,
// a transaction timeout outside (0, transaction.max.timeout.ms] is
// INVALID_TRANSACTION_TIMEOUT, an id whose __transaction_state partition
// is not led here NOT_COORDINATOR), whose PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH below v4. A block that cannot be allocated (etcd
// unreachable) is COORDINATOR_LOAD_IN_PROGRESS, which clients retry, as
// Kafka answers while its next block is on its way.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.InitProducerID, 0, 5, handleInitProducerID) }

// producerIDAllocTimeout bounds the etcd transaction that reserves a block.
const producerIDAllocTimeout = 10 * time.Second

// producerIDPool hands out producer ids from this broker's current block.
// Thread-safety: safe for concurrent use; mu is held while a new block is
// allocated, so concurrent callers wait for it instead of each allocating.
type producerIDPool struct {
	mu   sync.Mutex
	next int64 // next id to hand out
	last int64 // last id of the block; next > last: no block
}

func newProducerIDPool() *producerIDPool { return &producerIDPool{next: 0, last: -1} }

// nextID returns a producer id never handed out before by any broker,
// calling allocate for a new block when the current one is used up.
func (p *producerIDPool) nextID(ctx context.Context, allocate func(context.Context) (int64, int64, error)) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next > p.last {
		first, last, err := allocate(ctx)
		if err != nil {
			return -1, err
		}
		p.next, p.last = first, last
	}
	id := p.next
	p.next++
	return id, nil
}

func handleInitProducerID(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	fail := func(e *kerr.Error) {
		resp.ErrorCode = e.Code
		x.respond(resp)
	}
	if code := c.initProducerIDDenied(req.TransactionalID); code != 0 { // authorize.go
		resp.ErrorCode = code
		x.respond(resp)
		return
	}
	if (req.ProducerID == -1) != (req.ProducerEpoch == -1) {
		fail(kerr.InvalidRequest)
		return
	}
	if req.TransactionalID != nil {
		coord := c.srv.txnCoordinator()
		if coord == nil {
			fail(kerr.CoordinatorNotAvailable)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), producerIDAllocTimeout)
		defer cancel()
		id, epoch, code := coord.InitProducerID(ctx, *req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch)
		resp.ErrorCode = fencedCode(code, x.req.Version, 4)
		resp.ProducerID, resp.ProducerEpoch = id, epoch
		x.respond(resp)
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), producerIDAllocTimeout)
	defer cancel()
	id, err := c.srv.producerIDs.nextID(ctx, c.srv.ctrl.AllocateProducerIDBlock)
	if err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			c.srv.logger.Error("cannot allocate a producer id", "err", err)
			fail(ke)
			return
		}
		c.srv.logger.Warn("cannot allocate a producer id block; clients will retry", "err", err)
		fail(kerr.CoordinatorLoadInProgress)
		return
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	x.respond(resp)
}
