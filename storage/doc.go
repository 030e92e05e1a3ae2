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
//	  00000000000000000000.index      offset index (see index.go)
//	  00000000000000000000.timeindex  time index
//	  00000000000000004711.log ...    next segment, named by its base offset
//	  recovery-point-offset-checkpoint  offsets below are fsynced (see checkpoint.go)
//	  log-start-offset-checkpoint       first readable offset after DeleteRecords
//	  .kafka_cleanshutdown            present only while the log is closed cleanly
//	  *.deleted                       files of a deleted segment awaiting removal
//
// # Record batch (magic v2), big-endian
//
//	baseOffset           int64   set by the broker
//	batchLength          int32   bytes after this field
//	partitionLeaderEpoch int32   set by the broker
//	magic                int8    2
//	crc                  uint32  CRC32C (Castagnoli) of attributes..end
//	attributes           int16   bits 0-2 codec, 3 timestamp type (1 = LogAppendTime),
//	                             4 transactional, 5 control, 6 delete horizon set
//	lastOffsetDelta      int32
//	baseTimestamp        int64
//	maxTimestamp         int64   set by the broker for LogAppendTime
//	producerId           int64
//	producerEpoch        int16
//	baseSequence         int32
//	recordCount          int32
//	records              (compressed with the codec; see records.go)
//
// A produced batch is validated and then written byte for byte, with only
// the broker-owned fields changed, so a fetch hands file ranges to the
// socket without decoding anything.
package storage
