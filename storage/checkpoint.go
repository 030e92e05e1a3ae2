package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Per-partition checkpoint files: the cleaner's, and those of a log
// opened without per-directory checkpoints (Options.Checkpoints; the
// broker uses those: dir_checkpoints.go, which migrates these files):
//
//	recovery-point-offset-checkpoint   "0\n<offset>\n"
//	log-start-offset-checkpoint        "0\n<offset>\n"
//	cleaner-offset-checkpoint          "0\n<offset>\n"  compacted logs: first dirty offset
//	high-watermark-checkpoint          "0\n<offset>\n"  see high_watermark.go
//
// The first line is the format version (0, as Kafka's checkpoint files).
// Files are replaced atomically: written to <name>.tmp, fsynced, renamed,
// and the directory fsynced.
const (
	recoveryPointFile  = "recovery-point-offset-checkpoint"
	logStartOffsetFile = "log-start-offset-checkpoint"
	cleanerOffsetFile  = "cleaner-offset-checkpoint"
	cleanShutdownFile  = ".kafka_cleanshutdown"
	checkpointTmp      = ".tmp"
)

// maxCheckpointBytes bounds a per-partition checkpoint file read: its two
// lines take at most 22 bytes.
const maxCheckpointBytes = 64

// readCheckpoint returns the offset in a checkpoint file; ok is false if
// the file is absent or malformed (a malformed one is reported in err for
// logging, and treated as absent).
func readCheckpoint(fsys FS, dir, name string) (offset int64, ok bool, err error) {
	buf, err := readBoundedFile(fsys, filepath.Join(dir, name), maxCheckpointBytes)
	var tooLarge *fileTooLargeError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return 0, false, nil
	case errors.As(err, &tooLarge):
		return 0, false, fmt.Errorf("malformed checkpoint %s: %w", name, err)
	case err != nil:
		return 0, false, err
	}
	lines := bytes.Split(bytes.TrimSpace(buf), []byte("\n"))
	if len(lines) != 2 || string(lines[0]) != "0" {
		return 0, false, fmt.Errorf("malformed checkpoint %s", name)
	}
	offset, perr := strconv.ParseInt(string(bytes.TrimSpace(lines[1])), 10, 64)
	if perr != nil || offset < 0 {
		return 0, false, fmt.Errorf("malformed checkpoint %s", name)
	}
	return offset, true, nil
}

// writeCheckpoint atomically and durably replaces a checkpoint file.
func writeCheckpoint(fsys FS, dir, name string, offset int64) error {
	return writeCheckpointSync(fsys, dir, name, offset, syncAll)
}

// writeCheckpointSync is writeCheckpoint with the fsyncs of mode.
func writeCheckpointSync(fsys FS, dir, name string, offset int64, mode fileSync) error {
	return replaceFileSync(fsys, dir, filepath.Join(dir, name), []byte("0\n"+strconv.FormatInt(offset, 10)+"\n"), mode)
}

// fileSync is which fsyncs replacing a file takes.
type fileSync int

const (
	// syncNone: neither. A reader must detect a torn file itself
	// (producer snapshots carry a CRC), and the caller fsync the file and
	// the directory later.
	syncNone fileSync = iota
	// syncContents: the new contents, not the rename, which is durable once
	// the caller fsyncs the directory: Close does that once for all the
	// files it writes, instead of once per file.
	syncContents
	// syncAll: the contents, then the directory after the rename.
	syncAll
)

// replaceFile atomically replaces path (in dir) with data: written to
// path.tmp, fsynced, renamed over path, the directory fsynced; the
// temporary file is removed on failure. Checkpoints, the leader epoch
// checkpoint and producer snapshots are all written this way.
func replaceFile(fsys FS, dir, path string, data []byte) error {
	return replaceFileSync(fsys, dir, path, data, syncAll)
}

// replaceFileSync is replaceFile with the fsyncs of mode.
func replaceFileSync(fsys FS, dir, path string, data []byte, mode fileSync) error {
	f, err := fsys.OpenFile(path+checkpointTmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil && mode >= syncContents {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(path+checkpointTmp, path)
	}
	if err == nil && mode == syncAll {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		_ = fsys.Remove(path + checkpointTmp)
	}
	return err
}

// writeMarker creates the marker file name in dir holding body (often
// nothing). With any mode but syncNone it is durable on return: body
// fsynced, then the directory entry; with syncNone that is the caller's.
func writeMarker(fsys FS, dir, name string, body []byte, mode fileSync) error {
	f, err := fsys.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if len(body) > 0 {
		_, err = f.WriteAt(body, 0)
		if err == nil && mode != syncNone {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && mode != syncNone {
		err = fsys.SyncDir(dir)
	}
	return err
}

func fileExists(fsys FS, path string) (bool, error) {
	_, err := fsys.Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, err
}
