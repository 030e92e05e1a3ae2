package storage

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// Per-log-directory offset checkpoints, Kafka's OffsetCheckpointFile:
//
//	0                  the format version
//	2                  the number of entries
//	orders 0 4711      one line per partition: topic, partition, offset
//	orders 1 42
//
// Lines end in "\n". Kafka writes recovery-point-offset-checkpoint,
// log-start-offset-checkpoint and replication-offset-checkpoint (the high
// watermarks) this way, one of each per log directory; a file written here
// is byte for byte the one Kafka writes for the same entries in the same
// order (Strait sorts them by topic, then partition), so Kafka's tools read
// it. It is replaced as every checkpoint is: <name>.tmp written, fsynced,
// renamed, the directory fsynced.
//
// Reading follows Kafka's CheckpointFile: an empty file, or one holding
// only the version line, has no entries; any other deviation (a version
// other than 0, a line that is not "topic partition offset", numbers that
// do not parse, an entry count that does not match) is a
// *MalformedCheckpointError naming the file. Kafka's LogManager, on such an
// error in the recovery-point or log-start-offset file, logs a warning and
// goes on as if the file were absent (every log recovers from its start,
// every log start offset is its first segment's); callers here do the
// same.

// ReplicationOffsetFile is the per-directory high-watermark checkpoint's
// name (Kafka's ReplicaManager.HighWatermarkFilename).
const ReplicationOffsetFile = "replication-offset-checkpoint"

// offsetCheckpointVersion is the only version Kafka writes and reads.
const offsetCheckpointVersion = 0

// maxOffsetCheckpointBytes bounds what reading one file may allocate. A
// line is at most a 249-byte topic name and two numbers, so this is room
// for about 250,000 partitions of the longest names, millions of typical
// ones; a bigger file is rejected as malformed rather than read whole.
const maxOffsetCheckpointBytes = 64 << 20

// TopicPartitionOffset is one line of an offset checkpoint file.
type TopicPartitionOffset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// MalformedCheckpointError is a checkpoint file Kafka would refuse to read.
// Its text has Kafka's wording, with the file's path.
type MalformedCheckpointError struct {
	Path   string
	Reason string
}

func (e *MalformedCheckpointError) Error() string {
	return e.Reason + " in checkpoint file [" + e.Path + "]"
}

// OffsetCheckpointFile reads and writes one per-directory checkpoint file.
// It holds no lock: one writer per file (the directory's checkpoint task)
// is the caller's rule, as a single file-level lock is Kafka's.
type OffsetCheckpointFile struct {
	fs   FS
	dir  string
	name string
}

// NewOffsetCheckpointFile returns the checkpoint file name in log
// directory dir, read and written through fsys.
func NewOffsetCheckpointFile(fsys FS, dir, name string) *OffsetCheckpointFile {
	return &OffsetCheckpointFile{fs: fsys, dir: dir, name: name}
}

// Path is the file's path.
func (c *OffsetCheckpointFile) Path() string { return filepath.Join(c.dir, c.name) }

// Read returns the file's entries in file order; exists is false when the
// file is absent (no error then). A malformed file returns a
// *MalformedCheckpointError, an unreadable one the I/O error.
func (c *OffsetCheckpointFile) Read() (entries []TopicPartitionOffset, exists bool, err error) {
	path := c.Path()
	buf, err := readBoundedFile(c.fs, path, maxOffsetCheckpointBytes)
	var tooLarge *fileTooLargeError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, false, nil
	case errors.As(err, &tooLarge):
		return nil, true, &MalformedCheckpointError{Path: path, Reason: fmt.Sprintf("%d bytes, more than the %d read", tooLarge.size, tooLarge.limit)}
	case err != nil:
		return nil, true, err
	}
	entries, err = parseOffsetCheckpoint(path, buf)
	return entries, true, err
}

// parseOffsetCheckpoint parses a file's contents as Kafka's
// CheckpointReadBuffer with OffsetCheckpointFile's formatter does.
func parseOffsetCheckpoint(path string, data []byte) ([]TopicPartitionOffset, error) {
	lines := splitJavaLines(data)
	if len(lines) == 0 {
		return nil, nil
	}
	malformed := func(line []byte) error {
		return &MalformedCheckpointError{Path: path, Reason: "Malformed line '" + printable(line) + "'"}
	}
	version, err := strconv.ParseInt(string(lines[0]), 10, 32)
	if err != nil {
		return nil, malformed(lines[0])
	}
	if version != offsetCheckpointVersion {
		return nil, &MalformedCheckpointError{Path: path, Reason: fmt.Sprintf("Unrecognised version %d, expected version %d", version, offsetCheckpointVersion)}
	}
	if len(lines) == 1 {
		return nil, nil
	}
	expected, err := strconv.ParseInt(string(lines[1]), 10, 32)
	if err != nil {
		return nil, malformed(lines[1])
	}
	rest := lines[2:]
	if expected < 0 || expected != int64(len(rest)) {
		// Checked before parsing the entries, so that the allocation
		// is bounded by the file rather than by the count line; Kafka
		// reports the same mismatch after parsing them.
		return nil, &MalformedCheckpointError{Path: path, Reason: fmt.Sprintf("Expected [%d] entries, but found only [%d]", expected, len(rest))}
	}
	entries := make([]TopicPartitionOffset, 0, len(rest))
	for _, line := range rest {
		// Java's split on \s+ keeps a leading empty field, so a line
		// starting with whitespace has four fields: malformed there too.
		fields := splitJavaWhitespace(line)
		if len(fields) != 3 {
			return nil, malformed(line)
		}
		p, perr := strconv.ParseInt(string(fields[1]), 10, 32)
		o, oerr := strconv.ParseInt(string(fields[2]), 10, 64)
		if perr != nil || oerr != nil {
			// Kafka's formatter throws NumberFormatException here,
			// which its LogManager handles as any read failure.
			return nil, malformed(line)
		}
		entries = append(entries, TopicPartitionOffset{Topic: string(fields[0]), Partition: int32(p), Offset: o})
	}
	return entries, nil
}

// splitJavaLines splits as BufferedReader.readLine: lines end in \n, \r
// or \r\n; a final line without terminator counts, an empty tail does not.
func splitJavaLines(data []byte) [][]byte {
	var lines [][]byte
	for len(data) > 0 {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			lines = append(lines, data)
			break
		}
		lines = append(lines, data[:i])
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return lines
}

// splitJavaWhitespace splits as Java's Pattern.compile("\\s+").split: on
// runs of [ \t\n\x0B\f\r], a leading empty field kept, trailing ones
// dropped.
func splitJavaWhitespace(line []byte) [][]byte {
	isSpace := func(b byte) bool {
		return b == ' ' || b == '\t' || b == '\n' || b == '\x0b' || b == '\f' || b == '\r'
	}
	var fields [][]byte
	start := 0
	for i := 0; i < len(line); {
		if !isSpace(line[i]) {
			i++
			continue
		}
		fields = append(fields, line[start:i])
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		start = i
	}
	fields = append(fields, line[start:])
	for len(fields) > 0 && len(fields[len(fields)-1]) == 0 {
		fields = fields[:len(fields)-1]
	}
	return fields
}

// printable bounds and quotes a line for an error message.
func printable(line []byte) string {
	const max = 120
	if len(line) > max {
		return strconv.Quote(string(line[:max]))[1:] + "..."
	}
	q := strconv.Quote(string(line))
	return q[1 : len(q)-1]
}

// Write replaces the file with entries, in their order, durably.
func (c *OffsetCheckpointFile) Write(entries []TopicPartitionOffset) error {
	return c.writeSync(entries, syncAll)
}

// writeSync is Write with the fsyncs of mode.
func (c *OffsetCheckpointFile) writeSync(entries []TopicPartitionOffset, mode fileSync) error {
	return replaceFileSync(c.fs, c.dir, c.Path(), FormatOffsetCheckpoint(entries), mode)
}

// FormatOffsetCheckpoint is the file Kafka writes for entries, in their
// order.
func FormatOffsetCheckpoint(entries []TopicPartitionOffset) []byte {
	b := make([]byte, 0, 16+len(entries)*32)
	b = strconv.AppendInt(b, offsetCheckpointVersion, 10)
	b = append(b, '\n')
	b = strconv.AppendInt(b, int64(len(entries)), 10)
	b = append(b, '\n')
	for _, e := range entries {
		b = append(b, e.Topic...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(e.Partition), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.Offset, 10)
		b = append(b, '\n')
	}
	return b
}

// SortTopicPartitionOffsets orders entries by topic, then partition, the
// order Strait writes them in, so that a file changes only where offsets do.
func SortTopicPartitionOffsets(entries []TopicPartitionOffset) {
	slices.SortFunc(entries, func(a, b TopicPartitionOffset) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
}
