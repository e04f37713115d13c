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
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// Runner runs the case files of one folder through eKuiper and writes each
// case with eKuiper's outputs to another. *Oracle is the real one; one
// Runner serves one run at a time.
type Runner interface {
	Run(ctx context.Context, inDir, outDir string) error
}

// Oracle runs case files through eKuiper's harness.
type Oracle struct {
	// Binary is the compiled harness, DEST/oracle.test of
	// scripts/ekuiper-oracle.sh.
	Binary string
	// Root is the folder the harness keeps its configuration (etc/), data
	// (a SQLite file under data/) and logs in; empty means the binary's
	// folder. Two runs at once need two roots.
	Root string
}

var _ Runner = (*Oracle)(nil)

// WorkerOracle returns an oracle that runs o's binary in a root of its own
// under dir, made from o's root: a copy of its etc/ and data/lookup.json,
// empty log/ and plugins/. Several such oracles run at once.
func (o *Oracle) WorkerOracle(dir string) (*Oracle, error) {
	src := o.root()
	for _, d := range []string{"log", "plugins", "data", filepath.Join("internal", "topo", "topotest")} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("oracle root: %w", err)
		}
	}
	if err := copyTree(filepath.Join(src, "etc"), filepath.Join(dir, "etc")); err != nil {
		return nil, fmt.Errorf("oracle root: %w", err)
	}
	if err := copyFile(filepath.Join(src, "data", "lookup.json"), filepath.Join(dir, "data", "lookup.json")); err != nil {
		return nil, fmt.Errorf("oracle root: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("oracle root: %w", err)
	}
	return &Oracle{Binary: o.Binary, Root: abs}, nil
}

func (o *Oracle) root() string {
	if o.Root != "" {
		return o.Root
	}
	return filepath.Dir(o.Binary)
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(path, filepath.Join(dst, rel))
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Run replays the case files in inDir through eKuiper and writes each case,
// with eKuiper's emissions as "expected" (or "oracle_error" when eKuiper
// refused the rule), to outDir under the same base name. The harness runs
// in its package folder under the root, as its tests do, in UTC.
func (o *Oracle) Run(ctx context.Context, inDir, outDir string) error {
	bin, err := filepath.Abs(o.Binary)
	if err != nil {
		return fmt.Errorf("oracle binary: %w", err)
	}
	root, err := filepath.Abs(o.root())
	if err != nil {
		return fmt.Errorf("oracle root: %w", err)
	}
	inDir, _ = filepath.Abs(inDir)
	outDir, _ = filepath.Abs(outDir)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("oracle output: %w", err)
	}
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^TestOracle$", "-test.timeout", "0")
	cmd.Dir = filepath.Join(root, "internal", "topo", "topotest")
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
