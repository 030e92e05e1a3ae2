// Package recordbatch owns Kafka's magic v2 record batch: its byte layout,
// the varints of its records, building and reading batches, and the names
// and partitioner of the internal topics whose records the coordinators
// write. Storage, the broker and both coordinators use it; it imports
// nothing of the project.
//
// # Batch layout
//
// A batch is Kafka's DefaultRecordBatch, all integers big-endian:
//
//	baseOffset           int64   0
//	batchLength          int32   8   bytes after this field
//	partitionLeaderEpoch int32  12
//	magic                int8   16   2
//	crc                  uint32 17   CRC-32C (Castagnoli) over attributes..end
//	attributes           int16  21   codec 0-2, timestamp type 3, transactional 4, control 5, delete horizon 6
//	lastOffsetDelta      int32  23
//	baseTimestamp        int64  27
//	maxTimestamp         int64  35
//	producerId           int64  43
//	producerEpoch        int16  51
//	baseSequence         int32  53
//	records count        int32  57
//	records                     61   possibly compressed
//
// baseOffset, batchLength and partitionLeaderEpoch lie outside the CRC, so
// the broker sets the offset and epoch on append without recomputing it.
//
// Each record (DefaultRecord) is
//
//	length         varint  bytes that follow
//	attributes     int8    unused
//	timestampDelta varlong from baseTimestamp
//	offsetDelta    varint  from baseOffset
//	keyLength      varint  -1 = null
//	key            bytes
//	valueLength    varint  -1 = null
//	value          bytes
//	headerCount    varint
//	headers        [keyLength varint, key, valueLength varint, value]...
//
// with zigzag varints (varint: at most 5 bytes, int32; varlong: at most 10).
// A control batch holds one record whose key is a version and a type
// (0 abort, 1 commit: the end transaction markers) and whose value is the
// EndTxnMarker (version, coordinator epoch).
//
// # Internal topics
//
// ConsumerOffsetsTopic and TransactionStateTopic are the topics of the group
// and transaction coordinators; PartitionFor places a group or
// transactional id on one of their partitions with Java's String.hashCode,
// as Kafka does, so that Kafka tools and Strait agree.
//
// Nothing here panics on malformed input: the accessors of Batch need a
// slice of at least HeaderSize bytes (Check or ReadHeader verify it), and
// the record parsers and iterators return an error for anything truncated
// or malformed.
package recordbatch
