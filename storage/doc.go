// Package storage owns Kafka's partition log: record-batch validation and
// offset assignment (Kafka's LogValidator), segments with their offset and
// time indexes, the partition Log (append, read, roll, flush, retention),
// and recovery after a crash. Its files are Kafka's own, so a partition
// directory can be inspected with Kafka's tools.
//
// # Partition directory
//
//	<topic>-<partition>/
//	  00000000000000000000.log        segment: whole v2 record batches, back to back
//	                                  (with preallocate, the active one's file is
//	                                  segment.bytes long, zeros past its batches,
//	                                  trimmed on roll and clean close; recovery
//	                                  cuts the zeros after a crash)
//	  00000000000000000000.index      offset index (see index.go)
//	  00000000000000000000.timeindex  time index
//	  00000000000000000000.txnindex   aborted transactions with their marker here (txn_index.go)
//	  00000000000000004711.log ...    next segment, named by its base offset
//	  00000000000000000000.snapshot   producer state at that offset (producer_snapshot.go)
//	  cleaner-offset-checkpoint         compacted logs: the first dirty offset (checkpoint.go)
//	  leader-epoch-checkpoint           leader epochs and their start offsets (leader_epoch.go;
//	                                  written when the recovery point moves and at
//	                                  close, not on each change: recovery re-derives
//	                                  the epochs of the batches it rescans)
//	  partition.metadata                the topic id the directory belongs to (partition_metadata.go)
//	  .kafka_cleanshutdown            the log's own clean-shutdown marker: written by
//	                                  Close of a log closed on its own (the broker's
//	                                  stop marks the log directory instead:
//	                                  clean_shutdown.go), removed by Open
//	  *.deleted                       files of a deleted segment awaiting removal
//	  *.cleaned, *.swap               a segment the cleaner is writing / swapping in
//	                                  (the protocol and its recovery: swap.go)
//
// # Log directory identity
//
// As Kafka, <log.dir>/meta.properties names the cluster and node the
// directory belongs to (version=1, cluster.id, node.id, directory.id; a Java
// properties file, meta_properties.go). The replication manager writes it
// at a directory's first start and refuses to start on one naming another
// cluster or node, with Kafka's messages.
//
// # Log directory clean-shutdown marker
//
// As Kafka, <log.dir>/.kafka_cleanshutdown says every log of the directory
// was closed cleanly ({"version":0,"brokerEpoch":<epoch>}, Kafka's
// CleanShutdownFileHandler body; clean_shutdown.go). Its owner (the broker's
// replication manager) removes it before the directory's logs open, opens
// them with Options.CleanShutdown, and writes it again once they are all
// closed and the directory's checkpoints written.
//
// # Log directory checkpoints
//
// As Kafka, one file of each per log directory lists every partition:
// recovery-point-offset-checkpoint (offsets below are fsynced),
// log-start-offset-checkpoint (the first readable offset, after
// DeleteRecords or retention) and replication-offset-checkpoint (the high
// watermarks):
//
//	0                  version
//	2                  number of entries
//	orders 0 4711      topic partition offset, one line per partition
//	orders 1 42
//
// offset_checkpoint.go reads and writes that format byte for byte as Kafka
// does (OffsetCheckpointFile, with Kafka's parse errors); DirCheckpoints
// (dir_checkpoints.go) holds a directory's, says when they are written, and
// migrates the per-partition files older versions wrote in each partition
// directory (recovery-point-offset-checkpoint, log-start-offset-checkpoint,
// high-watermark-checkpoint, "0\n<offset>\n" each: dir_checkpoint.go). A
// Log opened without Options.Checkpoints still reads and writes those
// per-partition files (checkpoint.go, high_watermark.go).
//
// # Open files
//
// A segment's .log is its only descriptor, and with Options.FileCache (the
// broker's, shared by all its logs: filecache.go) not for good. The cache
// closes unpinned files, to be opened again by the next read or append,
// past two bounds:
//
//   - sealed bound, strait.log.segment.open.files.max (1,000): the log
//     files of sealed segments and of active segments whose partition went
//     a minute without appends (ReleaseIdleActive, which also unmaps their
//     indexes; an empty active segment goes at once), least recently used
//     first;
//   - total bound, every file the cache holds, active segments' included:
//     RLIMIT_NOFILE as read when the cache is made (the broker raises the
//     soft limit to the hard one first), less a quarter of it, or less
//     min(4,096, half of it) when that is more (OpenFilesBound), the rest
//     left for connections, the embedded etcd, checkpoints and index
//     files opened for a moment. Past it the sealed and idle files go
//     first, then active ones by a clock (an active file appended to or
//     read since the hand last passed is spared once).
//
// So the active files of the partitions being written stay open as long
// as they fit under the total bound (15,000 at a limit of 20,000: a load
// over 10,000 partitions opens nothing), and a load over more partitions
// than that costs a close and an open for an append whose file was closed
// instead of failing with EMFILE, as it did when every active segment kept
// its descriptor for a minute. An open that fails all the same for want
// of descriptors (taken by connections or etcd) makes the cache close some
// of its files and is tried again. A file is never closed while a read
// uses it or a ReadResult's slices still pin it for sendfile, so the
// bounds are exceeded by the reads in flight, never broken; and a fetch's
// read (ReadWithinFileBound) declines to hold a file once the files held
// by ReadResults reach the total bound (files other reads hold it reads
// whatever the count), so that a fetch over 100,000 partitions cannot
// take the process past RLIMIT_NOFILE; FileCache.HeldBelowBound tells a
// fetch that read nothing else when to try again. Without a FileCache every
// segment's .log stays open until the segment is deleted.
//
// Index files hold none: the active segment's .index and .timeindex are
// memory-mapped read-write from its first append (a log opened maps
// nothing), a sealed segment's are mapped read-only on
// their first lookup, and both are unmapped when the segment is closed or
// deleted, an idle active segment's by ReleaseIdleActive (index.go says
// when and why, and what bounds the number of mappings). The .txnindex,
// the checkpoints, the producer snapshots and the leader-epoch-checkpoint
// are opened for each read or write and closed after it. A broker thus
// needs at most the total bound of descriptors for its segments, and at
// most the sealed bound once its partitions are idle (Kafka: one per
// segment).
//
// # Record batches
//
// Segments hold magic v2 record batches, whose layout, records and varints
// are package recordbatch's. The broker owns three header fields:
// baseOffset and partitionLeaderEpoch, set on append outside the CRC, and
// maxTimestamp with the timestamp type bit for LogAppendTime topics (the
// CRC is then recomputed).
//
// A produced batch is validated and then written byte for byte, with only
// the broker-owned fields changed, so a fetch hands file ranges to the
// socket without decoding anything.
//
// # Replication
//
// A follower appends the leader's batches as they are, offsets and leader
// epochs included (AppendAsFollower, follower.go), and cuts its log back
// where it diverged from a new leader's (TruncateTo, TruncateFullyAndStartAt,
// truncate.go), found with the leader epoch cache (leader_epoch.go) that
// every append keeps in memory; a new epoch, a truncation or a new log
// start costs no fsync (Kafka fsyncs its file on each new epoch). The high
// watermark is checkpointed so that a restarted replica does not expose
// records that were never committed (high_watermark.go).
//
// # Cleanup policies
//
// LogConfig.Delete (cleanup.policy contains delete) applies retention.ms
// and retention.bytes in DeleteOldSegments. LogConfig.Compact hands the log
// to the Cleaner (cleaner.go, clean.go), which rewrites sealed segments
// keeping the latest record of each key. Compaction rewrites batches only
// in these ways, all of them Kafka's: a batch losing records is re-encoded
// with its codec, base offset, last offset delta and producer fields kept,
// so offsets never change and gaps appear between batches (a fetch at a
// removed offset gets the next batch); a batch keeping tombstones gets
// attributes bit 6 and its baseTimestamp becomes the delete horizon (the
// time from which the tombstones may go, KIP-534), record timestamp deltas
// being rebased on it; a batch losing every record is dropped, or kept as a
// 61-byte header with zero records (no codec, baseTimestamp -1, its
// maxTimestamp and offsets) when it is a live producer's last or ends the
// cleaned range. The cleaner streams records (cleanrecords.go) and never
// holds a batch's decompressed records; a batch it cannot decode, or that
// expands past strait.max.decompressed.batch.bytes, marks the partition
// uncleanable, its data untouched, and the other logs are cleaned on.
package storage
