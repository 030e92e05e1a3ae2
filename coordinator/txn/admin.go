package txn

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransactions describes one transactional id (Kafka's
// handleDescribeTransactions): its state, producer, timeout, start time
// and partitions, or NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// TRANSACTIONAL_ID_NOT_FOUND.
func (c *Coordinator) DescribeTransactions(id string) kmsg.DescribeTransactionsResponseTransactionState {
	st := kmsg.NewDescribeTransactionsResponseTransactionState()
	st.TransactionalID = id
	if id == "" {
		st.ErrorCode = kerr.InvalidRequest.Code
		return st
	}
	sh, code := c.shardOf(id)
	if code != 0 {
		st.ErrorCode = code
		return st
	}
	m := sh.get(id)
	if m == nil {
		st.ErrorCode = kerr.TransactionalIDNotFound.Code
		return st
	}
	m.lock()
	defer m.unlock()
	if m.state == Dead {
		st.ErrorCode = kerr.TransactionalIDNotFound.Code
		return st
	}
	st.State = m.state.String()
	st.TimeoutMillis = m.timeoutMs
	st.StartTimestamp = m.startMs
	st.ProducerID = m.producerID
	st.ProducerEpoch = m.producerEpoch
	for _, tp := range m.sortedPartitions() {
		if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic = tp.Topic
			st.Topics = append(st.Topics, t)
		}
		last := &st.Topics[len(st.Topics)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	return st
}

// ListTransactions lists the transactional ids this coordinator owns
// (Kafka's listTransactionStates), filtered by state names (unknown names
// are echoed back), producer ids and, from v1, a minimum running time.
func (c *Coordinator) ListTransactions(req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	if c.closed.Load() {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	for _, sh := range *c.shards.Load() {
		if sh.loading.Load() {
			resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			return resp
		}
	}
	states := map[State]bool{}
	for _, name := range req.StateFilters {
		if s, ok := stateByName(name); ok {
			states[s] = true
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	duration := int64(-1)
	if req.Version >= 1 {
		duration = req.DurationFilterMillis
	}
	nowMs := c.now().UnixMilli()
	for _, sh := range *c.shards.Load() {
		for _, m := range sh.all() {
			m.lock()
			include := m.state != Dead &&
				(len(req.ProducerIDFilters) == 0 || slices.Contains(req.ProducerIDFilters, m.producerID)) &&
				(len(req.StateFilters) == 0 || states[m.state]) &&
				(duration < 0 || nowMs-m.startMs > duration)
			if include {
				ts := kmsg.NewListTransactionsResponseTransactionState()
				ts.TransactionalID, ts.ProducerID, ts.TransactionState = m.id, m.producerID, m.state.String()
				resp.TransactionStates = append(resp.TransactionStates, ts)
			}
			m.unlock()
		}
	}
	slices.SortFunc(resp.TransactionStates, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
		switch {
		case a.TransactionalID < b.TransactionalID:
			return -1
		case a.TransactionalID > b.TransactionalID:
			return 1
		}
		return 0
	})
	return resp
}
