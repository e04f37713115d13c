//go:build !race && !arenapoison

package row

// poisonRecycled: see poison_on.go.
const poisonRecycled = false
