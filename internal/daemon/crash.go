package daemon

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// crashFile is where the Go runtime writes the report of a fatal error or
// an unrecovered panic (besides stderr), under the data folder. A report
// found at boot means the previous process crashed; kill -9, power loss and
// the kernel's OOM killer leave none.
const crashFile = "crash.log"

// previousCrash reads the report the previous process left in dataDir,
// keeps it as crash.prev.log and returns a summary ("panic: ...", or
// "fatal error", with where the report is), or "" when the previous process
// did not crash.
func previousCrash(dataDir string) (string, error) {
	path := filepath.Join(dataDir, crashFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read crash report: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "", nil
	}
	if err := os.Rename(path, filepath.Join(dataDir, "crash.prev.log")); err != nil {
		return "", fmt.Errorf("keep crash report: %w", err)
	}
	line, _, _ := bufio.NewReader(bytes.NewReader(b)).ReadLine()
	summary := strings.TrimSpace(string(line))
	// A panic's report starts with its message; a fatal error's (out of
	// memory, a broken lock) may start with the stacks only.
	if !strings.HasPrefix(summary, "panic:") && !strings.HasPrefix(summary, "fatal error:") {
		summary = "fatal error"
	}
	return summary + "; the report is in " + filepath.Join(dataDir, "crash.prev.log"), nil
}

// recordCrashes makes the runtime write crash reports to dataDir; the
// returned func undoes it after a clean shutdown.
func recordCrashes(dataDir string) (func(), error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("crash report folder: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dataDir, crashFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open crash report: %w", err)
	}
	if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
		f.Close()
		return nil, fmt.Errorf("set crash output: %w", err)
	}
	// SetCrashOutput keeps its own duplicate of the descriptor.
	f.Close()
	return func() { debug.SetCrashOutput(nil, debug.CrashOptions{}) }, nil //nolint:errcheck // nil never fails
}
