package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/config"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

func TestRotator(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log", "stream.log")
	r, err := newRotator(path, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("x", 39) + "\n" // 40 bytes: two lines fit in 100
	for i := range 9 {
		if _, err := fmt.Fprint(r, line[:38]+fmt.Sprint(i%10)+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file  string
		lines string
	}{{"", "8"}, {".1", "67"}, {".2", "45"}}
	for _, tc := range tests {
		t.Run("stream.log"+tc.file, func(t *testing.T) {
			b, err := os.ReadFile(path + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				got += l[len(l)-1:]
			}
			if got != tc.lines {
				t.Fatalf("lines %q, want %q", got, tc.lines)
			}
		})
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Fatal("kept more than 2 old files")
	}
	if _, err := r.Write([]byte("late")); err == nil {
		t.Fatal("write after close succeeded")
	}
}

func TestRunServesAndShutsDown(t *testing.T) {
	base := t.TempDir()
	addr, stop := runDaemon(t, base)
	resp, err := http.Post("http://"+addr+"/streams", "application/json", strings.NewReader(`{"sql":"CREATE STREAM s () WITH (DATASOURCE=\"t\", TYPE=\"memory\")"}`))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create stream: %v %v", err, resp)
	}
	resp.Body.Close()
	resp, err = http.Post("http://"+addr+"/rules", "application/json", strings.NewReader(`{"id":"r","sql":"SELECT * FROM s","actions":[{"log":{}}]}`))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create rule: %v %v", err, resp)
	}
	resp.Body.Close()
	testwait.Until(t, "rule r running", func() bool {
		resp, err := http.Get("http://" + addr + "/rules/r/status")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct {
			Status string `json:"status"`
		}
		return json.NewDecoder(resp.Body).Decode(&st) == nil && st.Status == "running"
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(base, "data", "sqliteKV.db")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(base, "log", "stream.log"))
	if err != nil || !strings.Contains(string(b), "shutting down") || !strings.Contains(string(b), "msg=stopped") {
		t.Fatalf("log: %v %s", err, b)
	}
	// Run returns once the rule manager stopped every rule within the
	// graceful shutdown time; it warns when it could not.
	if strings.Contains(string(b), "stop rules") {
		t.Fatalf("shutdown did not stop the rule in time:\n%s", b)
	}
}

// TestInvalidCatalogNamesLoad starts on a catalog holding names the name
// validator refuses (written before it existed): the daemon starts, logs
// each, and a path built from such a name stays in its folder.
func TestInvalidCatalogNamesLoad(t *testing.T) {
	base := t.TempDir()
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(base, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := catalog.Open(ctx, filepath.Join(base, "data", "sqliteKV.db"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bad := "../../outside"
	keep := filepath.Join(base, "outside", "keep.txt")
	if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutStream(ctx, catalog.Stream{Name: bad, Kind: catalog.KindStream, SQL: "CREATE STREAM x () WITH (TYPE=\"memory\")"}, catalog.Create); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutRule(ctx, catalog.Rule{ID: bad, Definition: []byte(`{"id":"x","sql":"SELECT * FROM x","actions":[{"log":{}}]}`), State: catalog.RuleStopped}, catalog.Create); err != nil {
		t.Fatal(err)
	}
	st.Close()
	addr, stop := runDaemon(t, base)
	resp, err := http.Get("http://" + addr + "/streams")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /streams: %v %v", err, resp)
	}
	resp.Body.Close()
	if err := removeRuleData(filepath.Join(base, "data"), bad); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(base, "log", "stream.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "catalog holds an invalid name"); n != 2 {
		t.Fatalf("%d invalid names logged, want 2:\n%s", n, b)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("deleting the rule's data reached outside the data folder: %v", err)
	}
}

// TestRotatorByAge checks basic.rotateTime: a write to a file opened at
// least rotateTime ago goes to a new file.
func TestRotatorByAge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stream.log")
	r, err := newRotator(path, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	clk := clock.NewVirtual(0)
	r.rotateEvery(time.Hour, clk)
	fmt.Fprintln(r, "first")
	clk.AdvanceTo((59 * time.Minute).Milliseconds(), nil)
	fmt.Fprintln(r, "same file")
	clk.AdvanceTo(time.Hour.Milliseconds(), nil)
	fmt.Fprintln(r, "new file")
	old, err := os.ReadFile(path + ".1")
	if err != nil {
		t.Fatal(err)
	}
	cur, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(old) != "first\nsame file\n" || string(cur) != "new file\n" {
		t.Fatalf("rotated %q, current %q", old, cur)
	}
}

// TestNewFailureReleases: a daemon whose start fails part-way (here the
// engine, on an unknown time zone) returns the error and closes what it
// had opened, so the catalog can be opened again at once.
func TestNewFailureReleases(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Paths = config.Paths{Etc: filepath.Join(dir, "etc"), Data: filepath.Join(dir, "data")}
	cfg.Basic.Timezone = "Nowhere/Bogus"
	d, err := New(context.Background(), cfg, Options{})
	if err == nil || d != nil || !strings.Contains(err.Error(), "Nowhere/Bogus") {
		t.Fatalf("New = %v, %v; want an error naming the time zone", d, err)
	}
	cfg.Basic.Timezone = ""
	d, err = New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatalf("New after a failed one: %v", err)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
