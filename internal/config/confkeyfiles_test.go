package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfKeyFiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mqtt_source.yaml")
	write := func(content string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(file, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	server := func(c *ConfKeyFiles, env []string) string {
		t.Helper()
		keys, err := c.Load(file, env)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := keys.Resolve("default")
		s, _ := p["server"].(string)
		return s
	}
	var c ConfKeyFiles
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)

	t.Run("missing file is empty", func(t *testing.T) {
		if got := server(&c, nil); got != "" {
			t.Fatalf("server %q, want none", got)
		}
	})
	t.Run("created file is read", func(t *testing.T) {
		write("default:\n  server: tcp://a:1883\n", t0)
		if got := server(&c, nil); got != "tcp://a:1883" {
			t.Fatalf("server %q", got)
		}
	})
	t.Run("unchanged size and time is served from the cache", func(t *testing.T) {
		write("default:\n  server: tcp://b:1883\n", t0) // same size, same mtime
		if got := server(&c, nil); got != "tcp://a:1883" {
			t.Fatalf("server %q, want the cached tcp://a:1883", got)
		}
	})
	t.Run("a new modification time is read", func(t *testing.T) {
		write("default:\n  server: tcp://b:1883\n", t0.Add(time.Millisecond))
		if got := server(&c, nil); got != "tcp://b:1883" {
			t.Fatalf("server %q", got)
		}
	})
	t.Run("environment overrides are part of the key", func(t *testing.T) {
		env := []string{"MQTT_SOURCE__DEFAULT__SERVER=tcp://env:1883", "OTHER__DEFAULT__SERVER=x"}
		if got := server(&c, env); got != "tcp://env:1883" {
			t.Fatalf("server %q with override", got)
		}
		if got := server(&c, nil); got != "tcp://b:1883" {
			t.Fatalf("server %q without override", got)
		}
	})
	t.Run("bad yaml is an error each time until fixed", func(t *testing.T) {
		write("default: [\n", t0.Add(2*time.Millisecond))
		for range 2 {
			if _, err := c.Load(file, nil); err == nil || !strings.Contains(err.Error(), "mqtt_source.yaml") {
				t.Fatalf("err %v, want the file named", err)
			}
		}
		write("default:\n  server: tcp://c:1883\n", t0.Add(3*time.Millisecond))
		if got := server(&c, nil); got != "tcp://c:1883" {
			t.Fatalf("server %q", got)
		}
	})
	t.Run("removed file is empty again", func(t *testing.T) {
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
		if got := server(&c, nil); got != "" {
			t.Fatalf("server %q after removal", got)
		}
	})
}

func BenchmarkConfKeyFiles(b *testing.B) {
	file := filepath.Join(b.TempDir(), "mqtt_source.yaml")
	content := "default:\n  server: tcp://127.0.0.1:1883\n  qos: 1\n  bufferLength: 1024\ndemo_conf:\n  server: tcp://10.0.0.1:1883\n"
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	env := os.Environ()
	b.Run("LoadConfKeys", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := LoadConfKeys(file, env); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ConfKeyFiles", func(b *testing.B) {
		var c ConfKeyFiles
		for b.Loop() {
			if _, err := c.Load(file, env); err != nil {
				b.Fatal(err)
			}
		}
	})
}
