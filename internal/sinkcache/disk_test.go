package sinkcache

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// mountTmpfs mounts a size-capped tmpfs on a fresh directory, or skips the
// test when that is not possible (not root, no mount permission).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("full-disk test skipped: needs root to mount a size-capped tmpfs")
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("full-disk test skipped: mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{64 << 10, 4 << 10, 256, 1} {
		buf := make([]byte, chunk)
		for {
			if _, err := f.Write(buf); err != nil {
				break
			}
		}
	}
}

func TestFullDisk(t *testing.T) {
	mnt := mountTmpfs(t, "1m")
	dir := filepath.Join(mnt, "cache", "rule1", "sink0")
	v := clock.NewVirtual(0)
	const memCap = 50
	cfg := Config{Dir: dir, MemoryCacheThreshold: memCap, BufferPageSize: 16, Sync: SyncNone,
		DiskRetryInterval: time.Second}
	c := wrap(t, newFake(), cfg, Deps{Clock: v}) // never connected: the sink is down
	mustWrite(t, c, 1, 20)
	if s := c.Stats(); s.DiskLength != 20 || s.DiskError != "" {
		t.Fatalf("before the disk fills: %+v", s)
	}

	filler := filepath.Join(mnt, "filler")
	fill(t, filler)
	n := 20
	for c.Stats().DiskError == "" {
		n++
		if n > 2000 {
			t.Fatal("the cache never noticed the full disk")
		}
		mustWrite(t, c, n, n)
	}
	onDisk := n - 1 // record n was the first one the disk refused
	s := c.Stats()
	t.Logf("disk full after %d records: %s", onDisk, s.DiskError)
	if s.DiskLength != onDisk || s.Length != n || s.Dropped != 0 {
		t.Fatalf("degraded stats: %+v", s)
	}

	// The memory tier takes new records up to its threshold, then refuses
	// (and counts) the rest; older records are never sacrificed.
	inMemory := s.Length - s.DiskLength
	mustWrite(t, c, n+1, n+memCap-inMemory+5)
	last := n + memCap - inMemory
	s = c.Stats()
	if s.Dropped != 5 || s.Length != last || s.DiskLength != onDisk {
		t.Fatalf("memory tier full: %+v", s)
	}

	// Space returns; the next record after the retry interval writes the
	// memory-only records back in order, then itself.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	v.AdvanceTo(v.Now().Add(time.Second).UnixMilli(), nil)
	mustWrite(t, c, last+6, last+6)
	s = c.Stats()
	if s.DiskError != "" || s.DiskLength != s.Length || s.Length != last+1 {
		t.Fatalf("after recovery: %+v", s)
	}

	// Everything accepted is on disk now: it survives a crash.
	abandon(c)
	up := newFake()
	c2 := wrap(t, up, Config{Dir: dir, ResendInterval: time.Millisecond}, Deps{})
	if err := c2.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "replay", func() bool { return c2.Stats().Length == 0 })
	want := append(seq(1, last), int64(last+6))
	if got := nums(up.delivered()); !equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
}

// Flush reports records that exist only in memory because the disk fails.
func TestFlushWhileDiskFull(t *testing.T) {
	mnt := mountTmpfs(t, "256k")
	v := clock.NewVirtual(0)
	c := wrap(t, newFake(), Config{Dir: filepath.Join(mnt, "c"), Sync: SyncNone, BufferPageSize: 4}, Deps{Clock: v})
	mustWrite(t, c, 1, 2)
	fill(t, filepath.Join(mnt, "filler"))
	for i := 3; c.Stats().DiskError == ""; i++ {
		if i > 2000 {
			t.Fatal("the cache never noticed the full disk")
		}
		mustWrite(t, c, i, i)
	}
	if err := c.Flush(context.Background()); err == nil {
		t.Fatal("Flush succeeded with records held only in memory")
	}
	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(context.Background()); err != nil {
		t.Fatalf("Flush after space returned: %v", err)
	}
	if s := c.Stats(); s.DiskError != "" || s.DiskLength != s.Length {
		t.Errorf("after Flush: %+v", s)
	}
}
