package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The clean-shutdown marker of a log directory, as Kafka 4.4 writes it
// (CleanShutdownFileHandler): <log.dir>/.kafka_cleanshutdown, the JSON
// {"version":0,"brokerEpoch":<epoch>} with no newline (compat-tests/reference
// reads Strait's with Kafka's class and compares the bytes it writes).
// Its presence alone says that every log of the directory was closed
// cleanly (Kafka's LogManager.loadLogs reads exists(); the broker epoch is
// for KIP-966's clean-restart proof, and an unreadable body still counts as
// present). The directory's owner (the broker's replication manager)
// removes it before the directory's logs are written again and writes it
// once every log there is closed and the directory's checkpoints are
// written; the logs themselves are told by Options.CleanShutdown.
//
// A partition directory may hold a marker of the same name: written by
// Log.Close of a log closed on its own (a standalone log, or one closed
// while the broker runs), and by Strait versions before the directory
// marker for every log. A log's own marker is read by Open and removed
// there.

// CleanShutdownFileName is the marker's name, in a log directory and in a
// partition directory alike.
const CleanShutdownFileName = cleanShutdownFile

// cleanShutdownVersion is the version Kafka writes (CURRENT_VERSION).
const cleanShutdownVersion = 0

// HadCleanShutdown reports whether logDir holds its clean-shutdown marker,
// and the broker epoch in it (-1 when absent or unreadable: only the
// marker's presence says the shutdown was clean).
func HadCleanShutdown(fsys FS, logDir string) (clean bool, brokerEpoch int64, err error) {
	if fsys == nil {
		fsys = OSFS{}
	}
	path := filepath.Join(logDir, cleanShutdownFile)
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, -1, nil
	}
	if err != nil {
		return false, -1, err
	}
	defer f.Close()
	var buf [512]byte // Kafka's body is about 40 bytes
	n, _ := f.ReadAt(buf[:], 0)
	return true, parseCleanShutdown(buf[:n]), nil
}

// parseCleanShutdown is the broker epoch of a marker's body, -1 if it has
// none (Kafka's read gives an empty OptionalLong then).
func parseCleanShutdown(body []byte) int64 {
	var content struct {
		Version     int    `json:"version"`
		BrokerEpoch *int64 `json:"brokerEpoch"`
	}
	if json.Unmarshal(body, &content) != nil || content.BrokerEpoch == nil {
		return -1
	}
	return *content.BrokerEpoch
}

// WriteCleanShutdown writes logDir's clean-shutdown marker durably: its
// contents fsynced, then the directory. The caller writes it only once
// every log of the directory is closed and durable and the directory's
// checkpoints are written: a marker cut short by a crash still counts as
// present, and is then right.
func WriteCleanShutdown(fsys FS, logDir string, brokerEpoch int64) error {
	if fsys == nil {
		fsys = OSFS{}
	}
	// Kafka's Jackson serialization of its Content class, fields in order.
	body := fmt.Sprintf(`{"version":%d,"brokerEpoch":%d}`, cleanShutdownVersion, brokerEpoch)
	if err := writeMarker(fsys, logDir, cleanShutdownFile, []byte(body), syncAll); err != nil {
		return storageErr("clean-shutdown marker", err)
	}
	return nil
}

// RemoveCleanShutdown removes logDir's clean-shutdown marker durably (the
// directory fsynced), before any log of the directory is written again: a
// marker outliving a write would have the next start trust a log a crash
// may have torn. Absent, nothing is done.
func RemoveCleanShutdown(fsys FS, logDir string) error {
	if fsys == nil {
		fsys = OSFS{}
	}
	err := fsys.Remove(filepath.Join(logDir, cleanShutdownFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = fsys.SyncDir(logDir)
	}
	if err != nil {
		return storageErr("removing the clean-shutdown marker", err)
	}
	return nil
}
