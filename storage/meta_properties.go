package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/strait/strait/internal/javaprops"
)

// A log directory's identity, as Kafka 4.4 writes it (kafka-storage.sh
// format, MetaProperties v1): <log.dir>/meta.properties, a Java properties
// file
//
//	#
//	#Mon Dec 07 18:55:01 UTC 2026
//	version=1
//	cluster.id=<the cluster id>
//	node.id=<the broker's node.id>
//	directory.id=<a random Kafka UUID naming the directory>
//
// replaced atomically (meta.properties.tmp, fsynced, renamed; Kafka's
// PropertiesUtils.writePropertiesFile). Version 0 files (ZooKeeper-era
// Kafka) name the node broker.id and may lack cluster.id.
// compat-tests/reference has Kafka's MetaPropertiesEnsemble load Strait's.

// MetaPropertiesFileName is the identity file's name in a log directory.
const MetaPropertiesFileName = "meta.properties"

// metaPropertiesMaxSize bounds the file read: Kafka's is about 120 bytes.
const metaPropertiesMaxSize = 64 << 10

// MetaProperties is a log directory's identity.
type MetaProperties struct {
	// Version is 1 for what Strait and Kafka's KRaft brokers write, 0 for
	// ZooKeeper-era files.
	Version int
	// ClusterID is cluster.id, "" when absent (version 0 only).
	ClusterID string
	// NodeID is node.id (broker.id in version 0), -1 when absent (version
	// 0 only).
	NodeID int32
	// DirectoryID is directory.id, "" when absent.
	DirectoryID string
}

// ReadMetaProperties reads logDir's meta.properties; ok is false when the
// directory has none.
func ReadMetaProperties(fsys FS, logDir string) (mp MetaProperties, ok bool, err error) {
	if fsys == nil {
		fsys = OSFS{}
	}
	path := filepath.Join(logDir, MetaPropertiesFileName)
	buf, err := readBoundedFile(fsys, path, metaPropertiesMaxSize)
	if errors.Is(err, os.ErrNotExist) {
		return MetaProperties{}, false, nil
	}
	if err != nil {
		return MetaProperties{}, false, err
	}
	props, err := javaprops.Parse(bytes.NewReader(buf))
	if err == nil {
		mp, err = parseMetaProperties(props)
	}
	if err != nil {
		return MetaProperties{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return mp, true, nil
}

// parseMetaProperties is Kafka's MetaProperties.Builder(Properties) and
// build(): a missing version is 0; version 1 requires node.id and
// cluster.id.
func parseMetaProperties(props map[string]string) (MetaProperties, error) {
	mp := MetaProperties{NodeID: -1}
	switch v, ok := props["version"]; {
	case !ok || v == "0":
	case v == "1":
		mp.Version = 1
	default:
		return mp, fmt.Errorf("unknown meta.properties version number %s", v)
	}
	idKey := "node.id"
	if mp.Version == 0 {
		idKey = "broker.id"
	}
	if s, ok := props[idKey]; ok {
		id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return mp, fmt.Errorf("failed to parse %s property as an int: %s", idKey, s)
		}
		mp.NodeID = int32(id)
	} else if mp.Version == 1 {
		return mp, errors.New("node.id was not found")
	}
	mp.ClusterID = props["cluster.id"]
	if mp.ClusterID == "" && mp.Version == 1 {
		return mp, errors.New("cluster.id was not found")
	}
	mp.DirectoryID = props["directory.id"]
	return mp, nil
}

// WriteMetaProperties writes mp as logDir's meta.properties, atomically and
// durably, with now as the date comment Java's Properties.store writes.
func WriteMetaProperties(fsys FS, logDir string, mp MetaProperties, now time.Time) error {
	if fsys == nil {
		fsys = OSFS{}
	}
	var b strings.Builder
	// Properties.store's empty comment, then Date.toString().
	fmt.Fprintf(&b, "#\n#%s\n", now.UTC().Format("Mon Jan 02 15:04:05 MST 2006"))
	fmt.Fprintf(&b, "version=%d\n", mp.Version)
	if mp.ClusterID != "" {
		fmt.Fprintf(&b, "cluster.id=%s\n", javaprops.Escape(mp.ClusterID))
	}
	idKey := "node.id"
	if mp.Version == 0 {
		idKey = "broker.id"
	}
	if mp.NodeID >= 0 {
		fmt.Fprintf(&b, "%s=%d\n", idKey, mp.NodeID)
	}
	if mp.DirectoryID != "" {
		fmt.Fprintf(&b, "directory.id=%s\n", javaprops.Escape(mp.DirectoryID))
	}
	path := filepath.Join(logDir, MetaPropertiesFileName)
	if err := replaceFile(fsys, logDir, path, []byte(b.String())); err != nil {
		return storageErr("writing "+MetaPropertiesFileName, err)
	}
	return nil
}
