// Package txn is Strait's transaction coordinator, Kafka's
// TransactionCoordinator with its TransactionStateManager and
// TransactionMarkerChannelManager: it owns the transactional ids that hash
// onto the __transaction_state partitions its broker leads, answers
// InitProducerId (with a transactional id), AddPartitionsToTxn (including
// the verify-only form partition leaders send, KIP-890),
// AddOffsetsToTxn, EndTxn, DescribeTransactions and ListTransactions, writes
// the commit and abort markers to the partitions of a transaction, and
// aborts transactions that outlive their timeout.
//
// # __transaction_state
//
// A compacted topic (transaction.state.log.num.partitions, default 50); a
// transactional id lives on partition abs(recordbatch.JavaStringHash(id)) % partitions.
// Each record is keyed by the transactional id and holds its whole state
// after a transition, so the latest record of a key is the state; a null
// value (tombstone) is an expired id. Kafka's schemas, big-endian:
//
//	key   (TransactionLogKey)     version int16 = 0, transactional_id string
//	value (TransactionLogValue)   version int16: 0, or 1 once transaction.version is 2
//	  producer_id                 int64
//	  producer_epoch              int16
//	  transaction_timeout_ms      int32
//	  transaction_status          int8   0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort,
//	                                     4 CompleteCommit, 5 CompleteAbort, 6 Dead, 7 PrepareEpochFence
//	  transaction_partitions      [topic string, partition_ids [int32]], null when Empty
//	  transaction_last_update_timestamp_ms  int64
//	  transaction_start_timestamp_ms        int64
//	  (version 1, tagged) previous_producer_id int64 (tag 0), next_producer_id int64 (tag 1),
//	                      client_transaction_version int16 (tag 2)
//
// Version 1 is flexible: compact strings and arrays, tagged fields. Records
// are written one per uncompressed batch without producer id. The state of
// a partition is loaded by reading it from the start when this broker
// becomes its leader; the partition's leader epoch is the coordinator
// epoch, which every marker carries.
//
// # States
//
//	Empty --AddPartitions--> Ongoing --EndTxn--> PrepareCommit --markers--> CompleteCommit
//	                                       \---> PrepareAbort  --markers--> CompleteAbort
//	Ongoing --InitProducerId or timeout--> PrepareEpochFence (in memory) --> PrepareAbort
//
// A transition is first marked pending (another one meanwhile is
// CONCURRENT_TRANSACTIONS), written to __transaction_state, then applied.
// Transaction version 2 (KIP-890) bumps the producer epoch at every EndTxn,
// lets an EndTxn abort an empty transaction, adds partitions implicitly
// from produce requests (AddPartitions with version 2), and recognises
// retries by the epoch one below; a producer id whose epochs are exhausted
// moves to a new one.
//
// # Concurrency
//
// No lock spans the coordinator on the request path: the loaded partitions
// are an immutable map behind an atomic pointer, each partition's ids a
// map under that partition's mutex, each id's state under its own mutex.
// Writes to __transaction_state are synchronous appends to the local log
// made without any of these locks held.
package txn
