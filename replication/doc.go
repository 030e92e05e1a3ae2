// Package replication owns the partitions this broker hosts and their
// replication, modelled on Kafka's ReplicaManager and Partition:
//
//   - Manager (manager.go): the set of hosted partitions, following the
//     metadata (open, reconfigure, become leader or follower, stop and
//     delete); the follower fetchers (fetcher.go), each on one incremental
//     fetch session with its leader (fetchsession.go); the maintenance loop
//     (flush.ms, retention, producer-id expiry, ISR shrinking) and the
//     high-watermark checkpoint loop (loops.go); the log cleaner; Start
//     (which first moves aside the stray partition logs, stray.go) and
//     Close.
//   - Partition (partition.go, leader.go): one partition's log, its state
//     from the metadata, its role, the high watermark, ISR changes, the
//     acks=all waiters and the parked fetches.
//
// It reads the cluster through narrow interfaces it declares (deps.go): a
// MetadataView (topics, brokers, change notifications), an ISRWriter
// (AlterPartition) and a BrokerClient (a request to broker N), with the
// partition logs in package storage; so its tests run with fakes, without
// etcd. Its settings are a typed Config; it reads no property map.
//
// # Goroutines
//
// Manager.Start starts the maintenance loop, the high-watermark checkpoint
// loop and the cleaner; follow starts one fetcher goroutine per leader
// broker; an ISR change is sent by a goroutine of its own; a log directory
// left by a deleted topic is removed by one. Close stops all of them and
// waits for each before it closes the logs.
//
// # Lock order
//
// Manager.mu (metadata application) > fetchers.mu > fetcher.mu >
// Partition.repl.mu > the storage.Log's locks; Partition.waitMu is a leaf.
// The request path (produce, fetch) takes only the per-partition locks
// (repl.mu, waitMu, the log's): never Manager.mu nor a fetcher's.
package replication
