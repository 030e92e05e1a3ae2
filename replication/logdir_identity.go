package replication

import (
	"fmt"
	"path/filepath"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/storage"
)

// checkLogDirIdentities makes sure every log directory belongs to this
// cluster and node before anything in it is read or written, as Kafka's
// MetaPropertiesEnsemble.verify does at a broker's start: each directory's
// meta.properties must name etcd's cluster id and this broker's node.id,
// and no two directories may share a directory.id. A directory without the
// file (a new broker, a log dir added to log.dirs, or a Strait version
// before it) is given one, with a new directory.id, as Kafka formats an
// empty log directory it finds beside formatted ones; one without a
// directory.id gets one. Strait formats on first start, where Kafka needs
// kafka-storage.sh format first.
//
// A mismatch stops the start: a log dir of another cluster (a broker
// pointed at a new etcd, or at the wrong directory) would otherwise have
// its partitions taken for strays, and another node's would be served as
// this one's replicas.
func (m *Manager) checkLogDirIdentities() error {
	clusterID := m.meta.ClusterID()
	fsys := m.filesystem()
	dirIDs := map[string]string{} // directory.id -> log dir
	for _, d := range m.cfg.LogDirs {
		d = filepath.Clean(d)
		path := filepath.Join(d, storage.MetaPropertiesFileName)
		mp, found, err := storage.ReadMetaProperties(fsys, d)
		if err != nil {
			return fmt.Errorf("log dir %s: %w", d, err)
		}
		if found {
			if mp.ClusterID != "" && mp.ClusterID != clusterID {
				return fmt.Errorf("Invalid cluster.id in: %s. Expected %s, but read %s (the cluster id is etcd's: "+
					"this directory was written by another cluster, or etcd's data was lost)", path, clusterID, mp.ClusterID)
			}
			if mp.NodeID >= 0 && mp.NodeID != m.cfg.NodeID {
				return fmt.Errorf("Stored node id %d doesn't match previous node id %d in %s. If you moved your data, "+
					"make sure your configured node id matches. If you intend to create a new node, you should remove "+
					"all data in your data directories.", mp.NodeID, m.cfg.NodeID, path)
			}
		}
		if !found || mp.DirectoryID == "" || mp.ClusterID == "" || mp.NodeID < 0 {
			if !found {
				mp = storage.MetaProperties{Version: 1}
			}
			mp.ClusterID, mp.NodeID = clusterID, m.cfg.NodeID
			if mp.DirectoryID == "" {
				mp.DirectoryID = controller.FormatUUID(controller.NewKafkaUUID())
			}
			if err := fsys.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("log dir %s: %w", d, err)
			}
			if err := storage.WriteMetaProperties(fsys, d, mp, m.now()); err != nil {
				return fmt.Errorf("log dir %s: %w", d, err)
			}
			m.logger.Info("log directory formatted", "dir", d, "cluster.id", clusterID, "node.id", m.cfg.NodeID,
				"directory.id", mp.DirectoryID, "had_meta_properties", found)
		}
		if prev, dup := dirIDs[mp.DirectoryID]; dup {
			return fmt.Errorf("Duplicate directory ID %s found. It was the ID of %s, but also of %s", mp.DirectoryID, prev, d)
		}
		dirIDs[mp.DirectoryID] = d
	}
	return nil
}
