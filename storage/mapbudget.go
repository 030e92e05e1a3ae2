package storage

import (
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// indexMaps bounds the index mappings of the process below
// vm.max_map_count. Past that limit every mmap fails, the Go runtime's
// own included, which then stops the process ("fatal error: runtime: out
// of memory"): writing to 110,000 partitions at once, two mapped indexes
// each, did that. So a mapping is taken from this budget first; an
// active index that gets none stays parked and takes its entries with
// pwrite (storePending), and a sealed one is searched with pread (view),
// as when mmap itself fails.
var indexMaps mapBudget

// errMapBudget: the index mappings have reached their bound.
var errMapBudget = errors.New("index mappings at the bound below vm.max_map_count")

type mapBudget struct {
	held  atomic.Int64
	once  sync.Once
	bound atomic.Int64 // set at the first take (tests may lower it)
}

// take reserves one mapping; false when the bound is reached.
func (b *mapBudget) take() bool {
	b.once.Do(func() { b.bound.CompareAndSwap(0, int64(MappingsBound(maxMapCount()))) })
	if b.held.Add(1) > b.bound.Load() {
		b.held.Add(-1)
		return false
	}
	return true
}

// give returns a mapping taken.
func (b *mapBudget) give() { b.held.Add(-1) }

// MappingsBound is the index mappings allowed under a vm.max_map_count of
// limit: the limit less a quarter of it, or less min(16,384, half of it)
// when that is more, for the mappings the package does not hold (the Go
// heap, thread stacks, the embedded etcd's bbolt file, shared libraries).
// 65,530 (the default) gives 49,146. 0 (unknown): no bound.
func MappingsBound(limit int) int {
	if limit <= 0 {
		return math.MaxInt
	}
	return max(1, limit-max(limit/4, min(16384, limit/2)))
}

// maxMapCount is vm.max_map_count, 0 where it cannot be read (not Linux).
func maxMapCount() int {
	b, err := os.ReadFile("/proc/sys/vm/max_map_count")
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return n
}
