package storage

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"path/filepath"
)

// PartitionMetadataFile is Kafka's partition.metadata: the id of the topic
// a partition directory belongs to, so that a directory left by a deleted
// topic of the same name is never served as the new topic's.
//
//	version: 0
//	topic_id: <base64url of the 16-byte topic id, unpadded>
const PartitionMetadataFile = "partition.metadata"

// EncodeTopicID is a topic id as partition.metadata and Kafka's tools write
// it: base64url without padding.
func EncodeTopicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// WritePartitionMetadata writes dir's partition.metadata through fsys (nil:
// the real filesystem) atomically and durably: a temporary file, fsynced,
// renamed over the old one, the directory fsynced (Kafka's
// PartitionMetadataFile.maybeFlush).
func WritePartitionMetadata(fsys FS, dir string, topicID [16]byte) error {
	if fsys == nil {
		fsys = OSFS{}
	}
	body := []byte("version: 0\ntopic_id: " + EncodeTopicID(topicID) + "\n")
	path := filepath.Join(dir, PartitionMetadataFile)
	if err := replaceFile(fsys, dir, path, body); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// maxPartitionMetadataBytes bounds the file read: Kafka's is 44 bytes.
const maxPartitionMetadataBytes = 256

// ReadPartitionMetadata returns the topic id in dir's partition.metadata,
// read through fsys (nil: the real filesystem). A missing file is an error
// satisfying errors.Is(err, fs.ErrNotExist).
func ReadPartitionMetadata(fsys FS, dir string) ([16]byte, error) {
	var id [16]byte
	if fsys == nil {
		fsys = OSFS{}
	}
	path := filepath.Join(dir, PartitionMetadataFile)
	buf, err := readBoundedFile(fsys, path, maxPartitionMetadataBytes)
	if err != nil {
		return id, err
	}
	sc := bufio.NewScanner(bytes.NewReader(buf))
	for sc.Scan() {
		v, ok := bytes.CutPrefix(sc.Bytes(), []byte("topic_id:"))
		if !ok {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(string(bytes.TrimSpace(v)))
		if err != nil || len(raw) != 16 {
			return id, fmt.Errorf("bad topic_id in %s", path)
		}
		copy(id[:], raw)
		return id, nil
	}
	return id, fmt.Errorf("no topic_id in %s", path)
}
