package engine

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/rekuiper/rekuiper/internal/procs"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

var testAESKey = []byte("0123456789abcdef")

// TestSinkCompressionAndEncryption checks that a message sink receives
// each payload gzip-compressed, then AES-GCM encrypted with basic.aesKey
// (nonce first), and that the plain payload comes back.
func TestSinkCompressionAndEncryption(t *testing.T) {
	e := newTestEnv(t)
	e.runner.cfg.Deps.AESKey = testAESKey
	startRule(t, e, `{"id":"r","sql":"SELECT v FROM s","actions":[{"counting":{"sendSingle":true,"compression":"gzip","encryption":"aes"}}]}`)
	e.publish(t, 7)
	msgs, _ := e.out.wait(t, 1)
	b := []byte(msgs[0])
	block, err := aes.NewCipher(testAESKey)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := gcm.Open(nil, b[:gcm.NonceSize()], b[gcm.NonceSize():], nil)
	if err != nil {
		t.Fatalf("decrypt %x: %v", b, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(plain))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"v":7}` {
		t.Fatalf("payload %q", got)
	}
}

// TestFileSinkCompressedStream checks that the file sink compresses the
// whole file as one zstd stream.
func TestFileSinkCompressedStream(t *testing.T) {
	e := newTestEnv(t)
	startRule(t, e, `{"id":"r","sql":"SELECT v FROM s","actions":[{"file":{"path":"out.zst","sendSingle":true,"compression":"zstd"}}]}`)
	e.publish(t, 1, 2, 3)
	want := "{\"v\":1}\n{\"v\":2}\n{\"v\":3}\n"
	var got string
	if !testwait.Poll(testwait.Limit, func() bool {
		raw, err := os.ReadFile(filepath.Join(e.runner.cfg.Paths.Data, "out.zst"))
		if err != nil || len(raw) == 0 {
			return false
		}
		d, err := zstd.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		// The stream is flushed, not ended, while the rule runs.
		b, _ := io.ReadAll(d)
		d.Close()
		got = string(b)
		return got == want
	}) {
		t.Fatalf("file content %q, want %q", got, want)
	}
}

// TestSinkPayloadPropertiesRefused checks the clear errors for payload
// settings that cannot work.
func TestSinkPayloadPropertiesRefused(t *testing.T) {
	for _, c := range []struct {
		name, action, want string
	}{
		{"aes without key", `{"counting":{"encryption":"aes"}}`, "basic.aesKey"},
		{"unknown compression", `{"counting":{"compression":"lzma"}}`, `"lzma"`},
		{"rows sink", `{"memory":{"topic":"o","compression":"gzip"}}`, "writes rows"},
		{"file sink without key", `{"file":{"path":"x","encryption":"aes"}}`, "basic.aesKey"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnv(t)
			def := mustParseDef(t, `{"id":"r","sql":"SELECT v FROM s","actions":[`+c.action+`]}`)
			err := e.runner.Validate(context.Background(), def)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("validate: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestSinkStatusWhenBrokerDown checks what rule status shows for an MQTT
// sink whose broker refuses connections, with the sink cache on: the
// connection state and its real error, and records counted as cached, not
// as delivered.
func TestSinkStatusWhenBrokerDown(t *testing.T) {
	e := newTestEnv(t)
	port, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	run := startRule(t, e, fmt.Sprintf(`{"id":"r","sql":"SELECT v FROM s","actions":[{"mqtt":{
		"server":"tcp://127.0.0.1:%d","topic":"out","sendSingle":true,"enableCache":true}}]}`, port))
	e.publish(t, 1, 2, 3)
	const p = "sink_mqtt_0_0_"
	var m map[string]any
	// On a timeout the checks below say what is missing.
	testwait.Poll(testwait.Limit, func() bool {
		m = run.Metrics()
		return m[p+"cache_records_cached_total"] == int64(3) && m[p+"connection_last_disconnected_message"] != ""
	})
	if m[p+"cache_records_cached_total"] != int64(3) || m[p+"records_out_total"] != int64(0) {
		t.Fatalf("cached %v, records out %v; want 3 and 0", m[p+"cache_records_cached_total"], m[p+"records_out_total"])
	}
	if m[p+"connection_status"] == int64(1) || !strings.Contains(fmt.Sprint(m[p+"connection_last_disconnected_message"]), "refused") {
		t.Fatalf("connection status %v, message %q", m[p+"connection_status"], m[p+"connection_last_disconnected_message"])
	}
}

// TestSinkRecordsCountMessages: a sink's records in and out count the
// messages it is handed, as eKuiper's do: the rows of an emission with
// sendSingle (each row its own message), the emission without.
func TestSinkRecordsCountMessages(t *testing.T) {
	e := newTestEnv(t)
	run := startRule(t, e, `{"id":"r","sql":"SELECT v FROM s GROUP BY COUNTWINDOW(3)","actions":[
		{"nop":{"sendSingle":true}},{"nop":{}}]}`)
	e.publish(t, 1, 2, 3, 4, 5, 6)
	want := map[string]int64{
		"sink_nop_0_0_records_in_total": 6, "sink_nop_0_0_records_out_total": 6,
		"sink_nop_1_0_records_in_total": 2, "sink_nop_1_0_records_out_total": 2,
	}
	var m map[string]any
	// On a timeout the checks below say what is missing.
	testwait.Poll(testwait.Limit, func() bool {
		m = run.Metrics()
		return m["sink_nop_1_0_records_out_total"] == int64(2) && m["sink_nop_0_0_records_out_total"] == int64(6)
	})
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %d", k, m[k], v)
		}
	}
}
