package broker

// EnsureTxnStateTopic creates __transaction_state for tests until
// FindCoordinator creates it for transactional ids.
func EnsureTxnStateTopic(s *Server) error {
	_, err := s.txns().ensureTopic()
	return err
}
