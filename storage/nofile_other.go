//go:build !unix

package storage

// fileLimit is unknown here: no total bound (OpenFilesBound).
func fileLimit() uint64 { return 0 }

// fdExhausted: no descriptor limit to recognise here.
func fdExhausted(error) bool { return false }
