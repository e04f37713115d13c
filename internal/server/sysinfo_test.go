package server_test

import (
	"encoding/json"
	"regexp"
	"runtime"
	"strconv"
	"testing"
)

// TestInfoSystemFigures: GET / has eKuiper's cpuUsage ("n.nn%"),
// memoryUsed (resident bytes) and memoryTotal (bytes) as strings.
func TestInfoSystemFigures(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the figures come from /proc on linux")
	}
	s := newServer(t, "")
	code, body := s.do("GET", "/", "")
	if code != 200 {
		t.Fatalf("GET /: %d %s", code, body)
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		t.Fatal(err)
	}
	if cpu, _ := info["cpuUsage"].(string); !regexp.MustCompile(`^[0-9]+\.[0-9]{2}%$`).MatchString(cpu) {
		t.Errorf("cpuUsage %q, want n.nn%%", info["cpuUsage"])
	}
	used, err := strconv.ParseUint(str(info["memoryUsed"]), 10, 64)
	if err != nil || used == 0 {
		t.Errorf("memoryUsed %v: %v", info["memoryUsed"], err)
	}
	total, err := strconv.ParseUint(str(info["memoryTotal"]), 10, 64)
	if err != nil || total < used {
		t.Errorf("memoryTotal %v (used %d): %v", info["memoryTotal"], used, err)
	}
}

func str(v any) string { s, _ := v.(string); return s }
