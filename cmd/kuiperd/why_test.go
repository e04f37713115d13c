package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/client"
	"github.com/rekuiper/rekuiper/internal/connector/mqtt/mqtttest"
)

// The tests of this file run each remaining input of issue #14's "Why"
// against a real kuiperd: each gets a clear 4xx or an error of its own
// rule, the daemon stays up, and after a restart every other rule runs.

// wantRefused checks err is an API error with status 4xx whose message
// holds every text.
func wantRefused(t *testing.T, what string, err error, texts ...string) {
	t.Helper()
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status < 400 || ae.Status >= 500 {
		t.Errorf("%s: %v; want a 4xx", what, err)
		return
	}
	for _, s := range texts {
		if !strings.Contains(ae.Message, s) {
			t.Errorf("%s: %d %q; want it to name %q", what, ae.Status, ae.Message, s)
		}
	}
}

// restartAndWaitRunning kills d (SIGKILL), starts a new daemon on base and
// waits until every rule of ids is running.
func restartAndWaitRunning(t *testing.T, d *daemon, bin, base string, ids ...string) *daemon {
	t.Helper()
	d.stop()
	nd := startDaemon(t, bin, base)
	for _, id := range ids {
		waitStatus(t, nd, id, func(st map[string]any) bool { return st["status"] == "running" })
	}
	mustPing(t, nd)
	return nd
}

func writeEtc(t *testing.T, base, rel, content string) {
	t.Helper()
	p := filepath.Join(base, "etc", rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMistakesFailEarlyAtTheProcess: checked arithmetic and the mistakes
// that used to be accepted and fail later (Why bullets 3 and 5; unknown
// TYPE, missing CONF_KEY and unknown field are in TestDaemonChecksAtCreation).
func TestMistakesFailEarlyAtTheProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kuiperd")
	}
	bin, base := buildDaemon(t), t.TempDir()
	writeEtc(t, base, "sources/simulator.yaml", "big:\n  interval: 20ms\n  data:\n    - {\"n\": 1, \"s\": \"x\"}\n")
	d := startDaemon(t, bin, base)
	ctx := context.Background()
	for _, sql := range []string{
		`CREATE STREAM sim () WITH (TYPE="simulator", CONF_KEY="big", DATASOURCE="sim")`,
		`CREATE STREAM s1 (a bigint, b bigint) WITH (TYPE="memory", DATASOURCE="t1")`,
		`CREATE STREAM s2 (a bigint) WITH (TYPE="memory", DATASOURCE="t2")`,
	} {
		if _, err := d.c.CreateStream(ctx, client.Stream, sql); err != nil {
			t.Fatal(err)
		}
	}
	create := func(id, sql string) {
		t.Helper()
		if _, err := d.c.CreateRule(ctx, ruleJSON(id, sql, "")); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	create("healthy", "SELECT n FROM sim")

	t.Run("integer overflow is an error of the row", func(t *testing.T) {
		create("overflow", "SELECT n + 9223372036854775807 AS x FROM sim")
		waitStatus(t, d, "overflow", func(st map[string]any) bool {
			return st["status"] == "running" && metricContains(st, "_last_exception", "overflow")
		})
		_, err := d.c.CreateRule(ctx, ruleJSON("seq", "SELECT sequence(0, 9223372036854775807) AS x FROM sim", ""))
		wantRefused(t, "sequence beyond its bound", err, "sequence")
		mustPing(t, d)
	})

	t.Run("unknown qualifier, ambiguous column, unknown stream and sink", func(t *testing.T) {
		_, err := d.c.CreateRule(ctx, ruleJSON("q", "SELECT nosuch.a FROM s1", ""))
		wantRefused(t, "unknown stream qualifier", err, "nosuch")
		_, err = d.c.CreateRule(ctx, ruleJSON("amb", "SELECT a FROM s1 INNER JOIN s2 ON s1.b = s2.a GROUP BY TUMBLINGWINDOW(ss, 1)", ""))
		wantRefused(t, "ambiguous column", err, "ambiguous")
		_, err = d.c.CreateRule(ctx, ruleJSON("nostream", "SELECT a FROM nosuch", ""))
		wantRefused(t, "unknown stream", err, "nosuch")
		_, err = d.c.CreateRule(ctx, []byte(`{"id":"nosink","sql":"SELECT a FROM s1","actions":[{"nosuch":{}}]}`))
		wantRefused(t, "unknown sink type", err, "nosuch")
		for _, id := range []string{"q", "amb", "nostream", "nosink"} {
			if _, err := d.c.GetRule(ctx, id); err == nil {
				t.Errorf("refused rule %s was stored", id)
			}
		}
	})

	t.Run("a confKey in use cannot be deleted", func(t *testing.T) {
		path := "/metadata/sources/mqtt/confKeys/k1"
		if status, body, err := d.c.Do(ctx, http.MethodPut, path, map[string]any{"server": "tcp://127.0.0.1:1"}); err != nil || status != http.StatusOK {
			t.Fatalf("put confKey: %d %s %v", status, body, err)
		}
		if _, err := d.c.CreateStream(ctx, client.Stream, `CREATE STREAM viak1 () WITH (DATASOURCE="t", CONF_KEY="k1")`); err != nil {
			t.Fatal(err)
		}
		_, _, err := d.c.Do(ctx, http.MethodDelete, path, nil)
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusConflict || !strings.Contains(ae.Message, "streams viak1") {
			t.Errorf("delete a confKey in use: %v; want 409 naming the stream", err)
		}
		if _, err := d.c.DropStream(ctx, client.Stream, "viak1", false); err != nil {
			t.Fatal(err)
		}
		if status, body, err := d.c.Do(ctx, http.MethodDelete, path, nil); err != nil || status != http.StatusOK {
			t.Errorf("delete an unused confKey: %d %s %v", status, body, err)
		}
	})

	restartAndWaitRunning(t, d, bin, base, "healthy", "overflow")
}

// TestFailuresAreVisibleAtTheProcess: what used to fail silently is in
// the rule's status (Why bullet 6): a record that does not decode, a
// payload that does not decompress, a topic template naming a missing
// key, a sink that cannot connect (the real cause, records cached, not
// counted as delivered).
func TestFailuresAreVisibleAtTheProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kuiperd")
	}
	m := mqtttest.StartMosquitto(t)
	url := m.URL("plain")
	bin, base := buildDaemon(t), t.TempDir()
	writeEtc(t, base, "mqtt_source.yaml", fmt.Sprintf("default:\n  server: %s\nzipped:\n  server: %s\n  decompression: gzip\n", url, url))
	d := startDaemon(t, bin, base)
	ctx := context.Background()
	for _, sql := range []string{
		`CREATE STREAM raw () WITH (DATASOURCE="in/raw", FORMAT="json")`,
		`CREATE STREAM zipped () WITH (DATASOURCE="in/zip", FORMAT="json", CONF_KEY="zipped")`,
	} {
		if _, err := d.c.CreateStream(ctx, client.Stream, sql); err != nil {
			t.Fatal(err)
		}
	}
	down := fmt.Sprintf("tcp://127.0.0.1:%d", mqtttest.FreePort(t))
	rules := map[string]string{
		"decode":   `{"id":"decode","sql":"SELECT * FROM raw","actions":[{"log":{}}]}`,
		"zip":      `{"id":"zip","sql":"SELECT * FROM zipped","actions":[{"log":{}}]}`,
		"template": fmt.Sprintf(`{"id":"template","sql":"SELECT * FROM raw","actions":[{"mqtt":{"server":%q,"topic":"out/{{.missing}}","sendSingle":true}}]}`, url),
		"sinkdown": fmt.Sprintf(`{"id":"sinkdown","sql":"SELECT * FROM raw","actions":[{"mqtt":{"server":%q,"topic":"out/x","enableCache":true}}]}`, down),
	}
	for id, js := range rules {
		if _, err := d.c.CreateRule(ctx, []byte(js)); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	for id := range rules {
		waitStatus(t, d, id, func(st map[string]any) bool { return st["status"] == "running" })
	}
	// The sources read as connected once subscribed; publish then.
	for _, id := range []string{"decode", "zip"} {
		waitStatus(t, d, id, func(st map[string]any) bool { return metricEquals(st, "source_", "_connection_status", 1) })
	}
	pub := func(topic, payload string) {
		t.Helper()
		if out, err := exec.Command("mosquitto_pub", "-h", "127.0.0.1", "-p", fmt.Sprint(m.Plain), "-t", topic, "-q", "1", "-m", payload).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_pub: %v %s", err, out)
		}
	}
	pub("in/raw", "not json")
	pub("in/raw", `{"a":1}`)
	pub("in/zip", `{"plain":"not gzip"}`)

	st := waitStatus(t, d, "decode", func(st map[string]any) bool { return metricAtLeast(st, "source_raw_0_exceptions_total", 1) })
	if msg, _ := st["source_raw_0_last_exception"].(string); !strings.Contains(msg, "decode") {
		t.Errorf("decode error %q; want its text", msg)
	}
	st = waitStatus(t, d, "zip", func(st map[string]any) bool { return metricAtLeast(st, "source_zipped_0_exceptions_total", 1) })
	if msg, _ := st["source_zipped_0_last_exception"].(string); !strings.Contains(msg, "gzip") {
		t.Errorf("decompression failure %q; want it to name gzip", msg)
	}
	st = waitStatus(t, d, "template", func(st map[string]any) bool {
		return metricContains(st, "sink_mqtt_0_0_last_exception", "missing") && metricAtLeast(st, "sink_mqtt_0_0_exceptions_total", 1)
	})
	if metricAtLeast(st, "sink_mqtt_0_0_records_out_total", 1) {
		t.Errorf("a record with a missing topic key counted as delivered: %v", st)
	}
	st = waitStatus(t, d, "sinkdown", func(st map[string]any) bool {
		return metricContains(st, "sink_mqtt_0_0_connection_last_disconnected_message", "connection refused") &&
			st["sink_mqtt_0_0_connection_status"] == float64(-1) &&
			metricAtLeast(st, "sink_mqtt_0_0_cache_records_cached_total", 1)
	})
	if metricAtLeast(st, "sink_mqtt_0_0_records_out_total", 1) {
		t.Errorf("cached records counted as delivered: %v", st)
	}
	mustPing(t, d)
	restartAndWaitRunning(t, d, bin, base, "decode", "zip", "template", "sinkdown")
}

func metricAtLeast(st map[string]any, key string, n float64) bool {
	v, ok := st[key].(float64)
	return ok && v >= n
}

func metricEquals(st map[string]any, prefix, suffix string, n float64) bool {
	for k, v := range st {
		if f, ok := v.(float64); ok && strings.HasPrefix(k, prefix) && strings.HasSuffix(k, suffix) && f == n {
			return true
		}
	}
	return false
}

// TestSettingsDoWhatTheySayAtTheProcess: settings that used to be
// accepted and ignored (Why bullet 4) act in a real kuiperd: basic.aesKey
// with the file sink's encryption and compression, basic.ignoreCase, and
// basic.syslog. The shipped etc/sources/file.yaml is covered by the
// qualification smoke test (TestShippedConfigSmoke).
func TestSettingsDoWhatTheySayAtTheProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kuiperd")
	}
	syslog, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer syslog.Close()
	key := []byte("0123456789abcdef")
	bin, base := buildDaemon(t), t.TempDir()
	writeEtc(t, base, "kuiper.yaml", fmt.Sprintf(`basic:
  aesKey: %s
  ignoreCase: true
  syslog:
    enable: true
    network: udp
    address: %s
    level: info
    tag: rekuiper-why
`, base64.StdEncoding.EncodeToString(key), syslog.LocalAddr()))
	writeEtc(t, base, "sources/simulator.yaml", "mixed:\n  interval: 20ms\n  data:\n    - {\"Temp\": 21}\n")
	d := startDaemon(t, bin, base)
	ctx := context.Background()
	if _, err := d.c.CreateStream(ctx, client.Stream, `CREATE STREAM sim () WITH (TYPE="simulator", CONF_KEY="mixed", DATASOURCE="sim")`); err != nil {
		t.Fatal(err)
	}
	sealed := `{"id":"sealed","sql":"SELECT temp FROM sim","actions":[{"file":{"path":"sealed.out","compression":"gzip","encryption":"aes"}}]}`
	if _, err := d.c.CreateRule(ctx, []byte(sealed)); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, d, "sealed", func(st map[string]any) bool { return st["status"] == "running" && sinkRecordsIn(t, st) >= 3 })
	if _, err := d.c.RuleAction(ctx, "sealed", "stop"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, d, "sealed", func(st map[string]any) bool { return st["status"] == "stopped" })

	t.Run("file sink encryption and compression, ignoreCase", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(base, "data", "sealed.out"))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) <= aes.BlockSize || bytes.Contains(b, []byte("temp")) {
			t.Fatalf("file of %d bytes is not encrypted: %q", len(b), b)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			t.Fatal(err)
		}
		plain := make([]byte, len(b)-aes.BlockSize)
		cipher.NewCFBDecrypter(block, b[:aes.BlockSize]).XORKeyStream(plain, b[aes.BlockSize:])
		zr, err := gzip.NewReader(bytes.NewReader(plain))
		if err != nil {
			t.Fatalf("decrypted file is not gzip: %v", err)
		}
		text, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(text)), "\n")
		if len(lines) < 3 {
			t.Fatalf("file holds %q; want at least 3 records", text)
		}
		for _, l := range lines {
			if l != `{"temp":21}` && l != `[{"temp":21}]` {
				t.Fatalf("record %q; want temp read from the field Temp (ignoreCase)", l)
			}
		}
	})

	t.Run("syslog", func(t *testing.T) {
		// Bounds a hung test only: the daemon has logged at info since its start.
		if err := syslog.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64<<10)
		for {
			n, _, err := syslog.ReadFrom(buf)
			if err != nil {
				t.Fatalf("no syslog record with the tag: %v", err)
			}
			if strings.Contains(string(buf[:n]), "rekuiper-why") {
				break
			}
		}
	})

	if _, err := d.c.RuleAction(ctx, "sealed", "start"); err != nil {
		t.Fatal(err)
	}
	restartAndWaitRunning(t, d, bin, base, "sealed")
}
