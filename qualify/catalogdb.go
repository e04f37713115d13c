package qualify

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // database/sql driver "sqlite" for the catalog checks
)

// CatalogFile is the catalog database below a daemon's data folder.
func CatalogFile(dataDir string) string { return filepath.Join(dataDir, "sqliteKV.db") }

// IntegrityCheck runs PRAGMA integrity_check on a SQLite file (with the
// sqlite3 command when installed, as the operations guide does, otherwise
// through the embedded driver) and returns its answer, "ok" when sound.
func IntegrityCheck(ctx context.Context, path string) (string, error) {
	if bin, err := exec.LookPath("sqlite3"); err == nil {
		out, err := exec.CommandContext(ctx, bin, path, "PRAGMA integrity_check").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("sqlite3 integrity_check: %w: %s", err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return "", fmt.Errorf("integrity_check: %w", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return "", fmt.Errorf("integrity_check: %w", err)
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n"), rows.Err()
}

// OnlineBackup copies a live SQLite database to dst with the sqlite3
// command's ".backup" (the operations guide's procedure), or with VACUUM
// INTO through the embedded driver when sqlite3 is not installed. It
// returns the method used.
func OnlineBackup(ctx context.Context, src, dst string) (string, error) {
	if bin, err := exec.LookPath("sqlite3"); err == nil {
		out, err := exec.CommandContext(ctx, bin, src, ".backup '"+dst+"'").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("sqlite3 .backup: %w: %s", err, out)
		}
		return "sqlite3 .backup", nil
	}
	db, err := sql.Open("sqlite", "file:"+src)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", src, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		return "", fmt.Errorf("vacuum into %s: %w", dst, err)
	}
	return "VACUUM INTO", nil
}

// CopyTree copies the regular files and folders below src into dst.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, de os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if de.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !de.Type().IsRegular() {
			return nil
		}
		return copyFile(p, target)
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
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}
