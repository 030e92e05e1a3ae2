//go:build !linux

package storage

import "errors"

// SyncFS: no syncfs(2) outside Linux; logs are then fsynced one by one.
func (OSFS) SyncFS(string) error { return errors.ErrUnsupported }

func (OSFS) canSyncFS() bool { return false }
