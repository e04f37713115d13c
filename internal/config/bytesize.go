package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MinMemoryLimit is the smallest basic.memoryLimit accepted: below it the
// garbage collector would run without pause and the daemon do nothing else.
const MinMemoryLimit = 16 << 20

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// ParseByteSize reads a size in bytes: an integer ("536870912") or an
// integer with a unit ("512MiB", "2GB", "64KiB"; units are case-sensitive,
// KiB/MiB/GiB/TiB are powers of 1024, KB/MB/GB/TB of 1000). The empty
// string is 0.
func ParseByteSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	mult := int64(1)
	num := s
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q: want bytes or an integer with a unit such as 512MiB", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return n * mult, nil
}
