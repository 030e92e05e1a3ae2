package replication

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/strait/strait/storage"
)

// One clean-shutdown marker per log directory, as Kafka's LogManager
// writes it (storage.WriteCleanShutdown): <log.dir>/.kafka_cleanshutdown.
//
//   - Start reads each directory's marker before any of its logs opens and
//     removes it durably at once: the metadata replay starts followers'
//     fetches while later topics are still opening, so a log may be written
//     before the directory's logs are all open, and a marker still on disk
//     then would have the next start trust a log a crash may have torn
//     (Kafka, which writes nothing while it loads, removes it after the
//     load). A crash during the start thus costs a full recovery at the next.
//   - A partition directory present at that start is opened as cleanly shut
//     down (storage.Options.CleanShutdown) if the marker was there, once:
//     later opens of the same log (a move between directories) rely on the
//     log's own marker, written by Log.Close.
//   - Close writes a directory's marker, once every log hosted there closed
//     without error, was made durable and the directory's checkpoints are
//     written, unless the directory holds a log that is neither open nor
//     known clean: one present at a start without the marker and never
//     opened since (the start renames those the metadata does not place
//     here, stray.go, which leaves the count; one reassigned away between
//     that scan and its open stays), or one whose open or close failed
//     while the broker ran; such a log's own marker (a standalone close,
//     or a Strait version before the directory marker) vouches for it.
type cleanShutdown struct {
	mu   sync.Mutex
	dirs map[string]*dirShutdown // by cleaned log directory
	// brokerEpoch is this broker's registration epoch, taken by Stop while
	// the registration still stands; written into the markers.
	brokerEpoch int64
}

// dirShutdown is one log directory's state.
type dirShutdown struct {
	clean bool // the marker was there at start
	// unopened is the partition directories present at start and not yet
	// opened: covered by the marker if clean, of unknown state otherwise.
	unopened map[string]bool
	// unclean is partition directories whose last open or close failed and
	// that are not open now.
	unclean map[string]bool
}

// loadCleanShutdown reads and removes each log directory's marker, before
// any log opens. An error removing one fails the start: the directory's
// logs cannot be written safely.
func (m *Manager) loadCleanShutdown() error {
	cs := &m.shutdownMarks
	cs.dirs = map[string]*dirShutdown{}
	cs.brokerEpoch = -1
	fsys := m.filesystem()
	for _, d := range m.cfg.LogDirs {
		d = filepath.Clean(d)
		ds := &dirShutdown{unopened: map[string]bool{}, unclean: map[string]bool{}}
		cs.dirs[d] = ds
		clean, epoch, err := storage.HadCleanShutdown(fsys, d)
		if err != nil {
			m.logger.Warn("cannot read the log directory's clean-shutdown marker; recovering its logs", "dir", d, "err", err)
		}
		if entries, err := fsys.ReadDir(d); err == nil {
			for _, e := range entries {
				if _, _, ok := storage.ParsePartitionDirName(e.Name()); ok && e.IsDir() {
					ds.unopened[e.Name()] = true
				}
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			m.logger.Warn("cannot list the log directory", "dir", d, "err", err)
		}
		if clean {
			if err := storage.RemoveCleanShutdown(fsys, d); err != nil {
				return fmt.Errorf("log dir %s: %w", d, err)
			}
			ds.clean = true
		}
		m.logger.Info("log directory loaded", "dir", d, "clean_shutdown", ds.clean, "broker_epoch", epoch,
			"partition_dirs", len(ds.unopened))
	}
	return nil
}

// openedClean reports whether the partition directory dir, about to be
// opened, is covered by its log directory's marker, and notes it opened.
func (cs *cleanShutdown) openedClean(dir string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	ds, name := cs.dirs[filepath.Clean(filepath.Dir(dir))], filepath.Base(dir)
	if ds == nil {
		return false
	}
	clean := ds.clean && ds.unopened[name]
	delete(ds.unopened, name)
	return clean
}

// noteOpen records the outcome of opening the log in dir: a failure leaves
// it of unknown state.
func (cs *cleanShutdown) noteOpen(dir string, err error) { cs.note(dir, err != nil) }

// noteClosed records the close of the log in dir while the broker runs
// (not reopened): a failed one leaves it of unknown state.
func (cs *cleanShutdown) noteClosed(dir string, err error) { cs.note(dir, err != nil) }

func (cs *cleanShutdown) note(dir string, failed bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	ds, name := cs.dirs[filepath.Clean(filepath.Dir(dir))], filepath.Base(dir)
	if ds == nil {
		return
	}
	if failed {
		ds.unclean[name] = true
	} else {
		delete(ds.unclean, name)
	}
}

// markable reports whether logDir may get its marker once its hosted logs
// closed cleanly: every partition directory not open is known clean (see
// above). Those the marker would wrongly cover are counted in the error.
func (cs *cleanShutdown) markable(fsys storage.FS, logDir string) error {
	cs.mu.Lock()
	ds := cs.dirs[logDir]
	if ds == nil {
		cs.mu.Unlock()
		return errors.New("its marker was not read at start")
	}
	var check []string
	for name := range ds.unclean {
		check = append(check, name)
	}
	if !ds.clean {
		for name := range ds.unopened {
			if !ds.unclean[name] {
				check = append(check, name)
			}
		}
	}
	cs.mu.Unlock()
	unknown := 0
	for _, name := range check {
		pdir := filepath.Join(logDir, name)
		if _, err := fsys.Stat(pdir); errors.Is(err, os.ErrNotExist) {
			continue // deleted or moved aside since
		}
		if _, err := fsys.Stat(filepath.Join(pdir, storage.CleanShutdownFileName)); err == nil {
			continue // its own marker vouches for it
		}
		unknown++
	}
	if unknown > 0 {
		return fmt.Errorf("%d partition directories neither hosted nor known to be clean", unknown)
	}
	return nil
}
