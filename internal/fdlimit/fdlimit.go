// Package fdlimit owns this process's open-file limit (RLIMIT_NOFILE):
// reading it, raising the soft limit to the hard one, and recognising an
// error that means the process or the system ran out of descriptors.
// Every connection, segment log file, index file and etcd's WAL share the
// descriptors: the broker sizes its segment file cache and its reserve for
// new connections from this limit.
package fdlimit
