// Package testbroker measures Strait as a broker for tests, side by side
// with franz-go's kfake, in one run: the table of issue 16 (start to ready
// of one and three brokers, a create/produce/consume/commit test, twenty
// parallel tests each with its own broker, teardown).
//
// It holds benchmarks only (and one quick test that the measured test body
// works), so `go test ./...` does not run them:
//
//	make bench-testbroker
//	# or
//	go test -run '^$' -bench . -benchtime 7x -timeout 30m ./bench/testbroker/
//
// Three brokers are measured: kfake, Strait through straittest with its
// default shared etcd, and Strait through straittest WithEmbeddedEtcd (an
// etcd member per broker). Each benchmark reports medians as metrics, and the run
// ends with a markdown table of all of them (BENCHMARKS.md, "As a test
// broker").
package testbroker
