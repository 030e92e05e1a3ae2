package broker

// The fatal errors Err reports besides the control plane's (server.go):
// a listener that stops for good (acceptLoop) and the log directories all
// gone. Kafka takes a log dir offline on an I/O error in it and halts the
// broker once every log dir is offline ("Shutdown broker because all log
// dirs in ... have failed"). Strait keeps serving through a failed append
// or fsync (a full disk clears, see storage's FaultFS tests), so it finds a
// dir offline by looking at it: gone, not a directory, or not writable (a
// read-only remount). A dir found offline stays offline until restart, as
// in Kafka; while some dir is online the broker logs the loss and goes on.
// The dirs are looked at every logDirCheckInterval, and at once after an
// append failed with KAFKA_STORAGE_ERROR.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strait/strait/internal/fdlimit"
)

// logDirCheckInterval is how often watchLogDirs looks at the log dirs.
var logDirCheckInterval = time.Second

// temporaryAcceptError reports whether Accept failing with err may succeed
// later: out of descriptors, buffers or memory, or a connection that went
// away before it was accepted.
func temporaryAcceptError(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EAGAIN, syscall.EPROTO, syscall.EPERM} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// watchLogDirs checks the log dirs every logDirCheckInterval until Close
// and reports on Err once every one is offline.
func (s *Server) watchLogDirs() {
	t := time.NewTicker(logDirCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-t.C:
		case <-s.logDirsCheck:
		}
		if s.checkLogDirs() {
			return
		}
	}
}

// checkLogDirsSoon has watchLogDirs look at the log dirs now: a storage
// error (KAFKA_STORAGE_ERROR) may mean one is gone.
func (s *Server) checkLogDirsSoon() {
	select {
	case s.logDirsCheck <- struct{}{}:
	default:
	}
}

// checkLogDirs marks the log dirs that are gone or unwritable offline and
// reports whether all of them are (after failing the broker).
func (s *Server) checkLogDirs() (allOffline bool) {
	for _, dir := range s.cfg.Log.Dirs {
		if s.offlineDirs[dir] {
			continue
		}
		if err := s.logDirUsable(dir); err != nil {
			s.offlineDirs[dir] = true
			s.offlineDirN.Add(1)
			s.logger.Error("log dir is offline", "dir", dir, "err", err)
			if len(s.offlineDirs) < len(s.cfg.Log.Dirs) {
				s.leaveOfflineDir(dir)
			}
		}
	}
	if len(s.offlineDirs) < len(s.cfg.Log.Dirs) {
		return false
	}
	err := fmt.Errorf("broker: all log dirs in %s have failed", strings.Join(s.cfg.Log.Dirs, ","))
	s.logger.Error("every log dir is offline: the broker cannot go on", "log.dirs", strings.Join(s.cfg.Log.Dirs, ","))
	s.fail(err)
	return true
}

// leaveOfflineDir stops the partitions of dir (replication's
// MarkDirOffline) and has their leadership moved and this broker taken out
// of their ISRs through the controller, as Kafka's broker reports an offline
// dir to its controller. Kafka halts the broker when it cannot report the
// failure within log.dir.failure.timeout.ms (30 s); so does Strait, through
// Err. The ISR and leadership changes are etcd compare-and-swaps.
func (s *Server) leaveOfflineDir(dir string) {
	if s.replicas == nil || s.ctrl == nil {
		return
	}
	parts := s.replicas.MarkDirOffline(dir)
	if len(parts) == 0 {
		return
	}
	timeout := logDirFailureTimeout
	if v, err := strconv.ParseInt(strings.TrimSpace(s.cfg.Props["log.dir.failure.timeout.ms"]), 10, 64); err == nil && v > 0 {
		timeout = time.Duration(v) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	if err := s.ctrl.LeavePartitions(ctx, parts); err != nil {
		if s.ctx.Err() != nil {
			return // closing
		}
		s.logger.Error("could not report the offline log dir's partitions to the controller: the broker cannot go on",
			"dir", dir, "err", err)
		s.fail(fmt.Errorf("broker: reporting offline log dir %s: %w", dir, err))
	}
}

// logDirFailureTimeout is log.dir.failure.timeout.ms's default, used when
// the key is not set.
var logDirFailureTimeout = 30 * time.Second

// logDirUsable returns why dir cannot hold logs, nil if it can.
func (s *Server) logDirUsable(dir string) error {
	var fi os.FileInfo
	var err error
	if s.cfg.StorageFS != nil {
		fi, err = s.cfg.StorageFS.Stat(dir)
	} else {
		fi, err = os.Stat(dir)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return dirWritable(dir)
}

// fileLimitOnce raises the descriptor limit once per process, however many
// brokers it starts.
var fileLimitOnce sync.Once

// raiseFileLimitOnce raises the soft RLIMIT_NOFILE to the hard one
// (fdlimit.Raise) the first time a broker is made and logs the limits (or
// why they could not be raised).
func raiseFileLimitOnce(logger *slog.Logger) {
	fileLimitOnce.Do(func() {
		soft, hard, err := fdlimit.Raise()
		if err != nil {
			logger.Warn("could not raise the open file limit", "soft", soft, "hard", hard, "err", err)
			return
		}
		if hard > 0 {
			logger.Info("open file limit", "soft", soft, "hard", hard)
		}
	})
}
