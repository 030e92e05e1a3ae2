// Package straittest starts real Strait brokers inside a Go test: one broker
// or a replicated cluster of n, each with its own temporary directory, a
// fixed free port on 127.0.0.1 (kept across Restart), the embedded etcd
// members wired to each other, logs routed through t.Log, and defaults
// that make tests fast (no initial rebalance delay, one offsets partition,
// short session timeouts). Everything is closed by t.Cleanup.
//
//	c := straittest.Start(t, straittest.WithTopic("orders", 3, 1))
//	cl := c.Client(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("orders"))
//
//	c3 := straittest.StartCluster(t, 3, straittest.WithTopic("t", 1, 3))
//	leader := c3.Leader("t", 0)
//	c3.Restart(leader) // same directory, same port; clients carry on
//
// The package owns only what a test sees from outside: it drives the broker
// through its public API (broker.New, Start, Close; config.Parse) and reads
// cluster state through Kafka requests (kadm), never through the broker's
// internals. Disk faults go through storage.FS (WithFaultyDisks): a full
// disk, failing writes or fsyncs, latency per write and per fsync; with
// WithPowerLossDisks, PowerLoss also drops what a broker had not fsynced.
//
// The other faults use the broker's test hooks: Intercept answers chosen
// requests (by key, broker, topic, partition, group) with an error code, a
// delay or a dropped connection, as kfake's ControlKey; Kill stops a broker
// as a crash would (its leaderships move only once its lease expires);
// Pause and Resume make it a SIGSTOP'd process (nothing answered, lease
// lapsing); Isolate cuts it off from the other brokers and IsolateEtcd
// (with the shared etcd, the default) from etcd, until Heal; JumpClock
// steps a broker's wall clock forward or back (retention, ISR lag,
// transaction and token expiry read it), until ResetClock.
//
//	i := c.Intercept(straittest.Rule{Key: kmsg.Produce, Topic: "orders", Times: 2, Err: kerr.NotLeaderForPartition})
//	c3.Kill(c3.Leader("t", 0))
//
// By default the brokers keep their metadata in one etcd shared by the
// process's clusters, each under its own prefix: a broker starts in a few
// milliseconds and a cluster closes in milliseconds. WithEmbeddedEtcd gives
// each broker an etcd member of its own instead, as in production (start in
// tens of milliseconds, a three-broker cluster closes in seconds;
// docs/testing.md has the numbers).
package straittest
