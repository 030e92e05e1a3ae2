package broker

// txnOffsetsCompleted tells the group coordinator that a producer's
// transaction on a __consumer_offsets partition ended with a marker, so
// that its pending transactional offset commits become committed offsets
// or are dropped (Kafka's GroupCoordinator.onTransactionCompleted).
func (s *Server) txnOffsetsCompleted(partition int32, producerID int64, commit bool) {
	// TxnOffsetCommit lands with the group coordinator (issue 4); until then
	// no transactional offset is ever pending.
}
