package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"strings"
)

// castagnoli is the CRC-32C table of the snapshot file, as Kafka's
// ProducerStateManager writes it.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Producer state snapshots are Kafka's `%020d.snapshot` files
// (ProducerStateManager.writeSnapshot / readSnapshot, message schema
// ProducerSnapshot.json, version 1), so Kafka's tools read Strait's and the
// other way round. The name is the offset the snapshot was taken at: it
// holds the state after every batch below that offset. Big-endian:
//
//	version                  int16   1
//	crc                      uint32  CRC32C (Castagnoli) of every byte after this field
//	producerEntries          int32   count, then per producer (46 bytes each):
//	  producerId             int64
//	  epoch                  int16
//	  lastSequence           int32   last sequence of the producer's last batch
//	  lastOffset             int64   last offset of that batch; -1: no batch known
//	  offsetDelta            int32   lastOffset - the batch's first offset
//	  timestamp              int64   max timestamp of that batch (the expiry clock)
//	  coordinatorEpoch       int32   of the last transaction marker, -1 if none
//	  currentTxnFirstOffset  int64   first offset of the ongoing transaction, -1 if none
//
// Only the producer's last batch is kept, as in Kafka: after a restart a
// retry of that batch is still recognised as a duplicate, older ones only
// if the batches after the snapshot are replayed from the log.
//
// A snapshot is written to <name>.tmp, fsynced and renamed (Kafka writes in
// place; the result is the same file), so a crash leaves either the whole
// file or a .tmp that Open removes. The snapshot a roll takes is renamed
// without the fsyncs, which the Log's asynchronous flush makes later
// (Kafka's KAFKA-15046): a crash before may leave a torn file. A file
// failing the CRC or the layout is corrupt: Open deletes it and falls back
// to an older one, as Kafka does.
const (
	producerSnapshotSuffix    = ".snapshot"
	producerSnapshotVersion   = 1
	producerSnapshotHeader    = 2 + 4 + 4 // version, crc, entry count
	producerSnapshotCRCOffset = 2
	producerSnapshotEntrySize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
)

// errCorruptSnapshot is Kafka's CorruptSnapshotException.
var errCorruptSnapshot = errors.New("corrupt producer state snapshot")

func producerSnapshotPath(dir string, offset int64) string {
	return segmentPath(dir, offset, producerSnapshotSuffix)
}

// encodeProducerSnapshot lays out the entries (ordered by producer id, so
// equal states give equal files).
func encodeProducerSnapshot(producers map[int64]*producerStateEntry) []byte {
	ids := make([]int64, 0, len(producers))
	for id := range producers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := make([]byte, producerSnapshotHeader, producerSnapshotHeader+len(ids)*producerSnapshotEntrySize)
	be := binary.BigEndian
	be.PutUint16(b, producerSnapshotVersion)
	be.PutUint32(b[producerSnapshotHeader-4:], uint32(len(ids)))
	for _, id := range ids {
		e := producers[id]
		b = be.AppendUint64(b, uint64(id))
		b = be.AppendUint16(b, uint16(e.epoch))
		b = be.AppendUint32(b, uint32(e.lastSeq()))
		b = be.AppendUint64(b, uint64(e.lastDataOffset()))
		b = be.AppendUint32(b, uint32(e.lastOffsetDelta()))
		b = be.AppendUint64(b, uint64(e.lastTimestamp))
		b = be.AppendUint32(b, uint32(e.coordinatorEpoch))
		b = be.AppendUint64(b, uint64(e.currentTxnFirstOffset))
	}
	be.PutUint32(b[producerSnapshotCRCOffset:], crc32.Checksum(b[producerSnapshotCRCOffset+4:], castagnoli))
	return b
}

// decodeProducerSnapshot parses a snapshot file's bytes; every failure
// wraps errCorruptSnapshot.
func decodeProducerSnapshot(b []byte) ([]*producerStateEntry, error) {
	be := binary.BigEndian
	if len(b) < producerSnapshotHeader {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the header", errCorruptSnapshot, len(b))
	}
	if v := int16(be.Uint16(b)); v != producerSnapshotVersion {
		return nil, fmt.Errorf("%w: unknown file version %d", errCorruptSnapshot, v)
	}
	stored := be.Uint32(b[producerSnapshotCRCOffset:])
	if computed := crc32.Checksum(b[producerSnapshotCRCOffset+4:], castagnoli); stored != computed {
		return nil, fmt.Errorf("%w: stored crc %d, computed crc %d", errCorruptSnapshot, stored, computed)
	}
	n := int64(int32(be.Uint32(b[producerSnapshotHeader-4:])))
	rest := b[producerSnapshotHeader:]
	if n < 0 || n*producerSnapshotEntrySize != int64(len(rest)) {
		return nil, fmt.Errorf("%w: %d entries do not fill %d bytes", errCorruptSnapshot, n, len(rest))
	}
	entries := make([]*producerStateEntry, 0, n)
	for ; len(rest) > 0; rest = rest[producerSnapshotEntrySize:] {
		e := &producerStateEntry{
			producerID:            int64(be.Uint64(rest)),
			epoch:                 int16(be.Uint16(rest[8:])),
			lastTimestamp:         int64(be.Uint64(rest[26:])),
			coordinatorEpoch:      int32(be.Uint32(rest[34:])),
			currentTxnFirstOffset: int64(be.Uint64(rest[38:])),
		}
		if e.currentTxnFirstOffset < 0 {
			e.currentTxnFirstOffset = -1
		}
		lastSeq := int32(be.Uint32(rest[10:]))
		lastOffset := int64(be.Uint64(rest[14:]))
		offsetDelta := int32(be.Uint32(rest[22:]))
		if lastOffset >= 0 {
			e.batches = append(e.batches, batchMetadata{lastSeq: lastSeq, lastOffset: lastOffset, offsetDelta: offsetDelta, timestamp: e.lastTimestamp})
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// writeProducerSnapshot writes the snapshot file for offset, atomically,
// with the fsyncs of mode.
func writeProducerSnapshot(fsys FS, dir string, offset int64, data []byte, mode fileSync) error {
	return replaceFileSync(fsys, dir, producerSnapshotPath(dir, offset), data, mode)
}

// maxProducerSnapshotBytes bounds what readProducerSnapshot allocates: far
// more than any real partition's producers (46 bytes each), far less than
// what a garbage file size could ask for.
const maxProducerSnapshotBytes = 1 << 30

// readProducerSnapshot reads and decodes a snapshot file.
func readProducerSnapshot(fsys FS, path string) ([]*producerStateEntry, error) {
	b, err := readBoundedFile(fsys, path, maxProducerSnapshotBytes)
	var tooLarge *fileTooLargeError
	if errors.As(err, &tooLarge) {
		return nil, fmt.Errorf("%w: %d bytes", errCorruptSnapshot, tooLarge.size)
	}
	if err != nil {
		return nil, err
	}
	return decodeProducerSnapshot(b)
}

// listProducerSnapshots returns the offsets of the snapshot files in dir,
// ascending.
func listProducerSnapshots(fsys FS, dir string) ([]int64, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var offsets []int64
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), producerSnapshotSuffix) {
			continue
		}
		if off, ok := parseBaseOffset(e.Name(), producerSnapshotSuffix); ok {
			offsets = append(offsets, off)
		}
	}
	slices.Sort(offsets)
	return offsets, nil
}

// removeProducerSnapshotFile deletes one snapshot file; a missing one is
// already gone.
func removeProducerSnapshotFile(fsys FS, dir string, offset int64) error {
	err := fsys.Remove(producerSnapshotPath(dir, offset))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
