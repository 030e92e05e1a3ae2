package broker

// ParkedFetches is the number of fetches parked on s, for the external
// benchmarks (latency_bench_test.go) to know a fetch waits before producing.
func ParkedFetches(s *Server) int64 { return s.parkedFetches.Load() }
