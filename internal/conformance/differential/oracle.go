// Package differential compares rekuiper with eKuiper on rule test cases:
// it runs cases through eKuiper's own rule test harness (the oracle that
// scripts/ekuiper-oracle.sh builds), replays eKuiper's outputs through
// rekuiper, classifies the differences and shrinks them. The generator of
// random cases lives in gen.go; cmd/kuiperdiff drives both.
package differential

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Oracle runs case files through eKuiper's harness.
type Oracle struct {
	// Binary is the compiled harness, DEST/oracle.test of
	// scripts/ekuiper-oracle.sh.
	Binary string
}

// Run replays the case files in inDir through eKuiper and writes each case,
// with eKuiper's emissions as "expected" (or "oracle_error" when eKuiper
// refused the rule), to outDir under the same base name. The harness runs
// in its package folder, as its tests do, in UTC.
func (o *Oracle) Run(ctx context.Context, inDir, outDir string) error {
	bin, err := filepath.Abs(o.Binary)
	if err != nil {
		return fmt.Errorf("oracle binary: %w", err)
	}
	inDir, _ = filepath.Abs(inDir)
	outDir, _ = filepath.Abs(outDir)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("oracle output: %w", err)
	}
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^TestOracle$", "-test.timeout", "0")
	cmd.Dir = filepath.Join(filepath.Dir(bin), "internal", "topo", "topotest")
	cmd.Env = append(os.Environ(), "TZ=UTC", "ORACLE_CASES="+inDir, "ORACLE_OUT="+outDir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("run oracle: %w\n%s", err, tail(out.String(), 2000))
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
