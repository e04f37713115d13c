package bench

import (
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"runtime"
	"strings"
	"testing"
)

// HeapStats reads the MemStats trailer of a real profiler; gc=1 runs a
// collection first.
func TestHeapStatsFromProfiler(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/debug/pprof/heap", pprof.Handler("heap"))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	rest := NewREST(srv.URL)

	keep := make([][]byte, 64)
	for i := range keep {
		keep[i] = make([]byte, 64<<10) // 4 MB live
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	h, err := rest.HeapStats(true)
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(keep)
	if h.NumGC <= int64(before.NumGC) {
		t.Errorf("NumGC %d after gc=1, want more than %d", h.NumGC, before.NumGC)
	}
	if h.HeapAlloc < 4<<20 || h.HeapInuse < h.HeapAlloc || h.Sys < h.HeapInuse || h.StackInuse <= 0 {
		t.Errorf("implausible stats %+v with 4 MB live", h)
	}
	if h.Live() != h.HeapAlloc+h.StackInuse {
		t.Errorf("Live %d, want heap %d + stacks %d", h.Live(), h.HeapAlloc, h.StackInuse)
	}
}

func TestParseMemStatsIncomplete(t *testing.T) {
	_, err := parseMemStats(strings.NewReader("heap profile: 0: 0 [0: 0] @ heap/1048576\n# runtime.MemStats\n# HeapAlloc = 10\n"))
	if err == nil || !strings.Contains(err.Error(), "trailer incomplete") {
		t.Fatalf("err %v, want the incomplete trailer named", err)
	}
}
