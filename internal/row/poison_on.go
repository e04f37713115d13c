//go:build race || arenapoison

package row

// poisonRecycled is set in builds with the race detector or the
// arenapoison tag: Arena.Recycle overwrites what it recycles with garbage,
// so that tests see any read after recycling.
const poisonRecycled = true
