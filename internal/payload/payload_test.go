package payload

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func decompress(t *testing.T, method string, b []byte) []byte {
	t.Helper()
	var r io.Reader
	var err error
	switch method {
	case Gzip:
		r, err = gzip.NewReader(bytes.NewReader(b))
	case Zlib:
		r, err = zlib.NewReader(bytes.NewReader(b))
	case Flate:
		r = flate.NewReader(bytes.NewReader(b))
	case Zstd:
		var d *zstd.Decoder
		d, err = zstd.NewReader(bytes.NewReader(b))
		r = d
	default:
		return b
	}
	if err != nil {
		t.Fatalf("%s reader: %v", method, err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s read: %v", method, err)
	}
	return out
}

// openGCM decrypts eKuiper's message layout: nonce, ciphertext, tag.
func openGCM(t *testing.T, key, b []byte) []byte {
	t.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < gcm.NonceSize() {
		t.Fatalf("ciphertext of %d bytes", len(b))
	}
	plain, err := gcm.Open(nil, b[:gcm.NonceSize()], b[gcm.NonceSize():], nil)
	if err != nil {
		t.Fatalf("gcm open: %v", err)
	}
	return plain
}

func TestTransformerRoundTrip(t *testing.T) {
	in := []byte(strings.Repeat(`{"temperature":21.5,"device":"d1"}`, 20))
	for _, comp := range append([]string{""}, Compressions...) {
		for _, enc := range []string{"", AES} {
			t.Run(comp+"/"+enc, func(t *testing.T) {
				tr, err := NewTransformer(comp, enc, testKey)
				if err != nil {
					t.Fatal(err)
				}
				if comp == "" && enc == "" {
					if tr != nil {
						t.Fatal("transformer for no compression and no encryption")
					}
					return
				}
				out, err := tr.Apply(in)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Equal(out, in) {
					t.Fatal("payload unchanged")
				}
				if enc == AES {
					again, err := tr.Apply(in)
					if err != nil {
						t.Fatal(err)
					}
					if bytes.Equal(again, out) {
						t.Fatal("two encryptions of one payload are equal: nonce not random")
					}
					out = openGCM(t, testKey, out)
				}
				if got := decompress(t, comp, out); !bytes.Equal(got, in) {
					t.Fatalf("round trip: got %q", got)
				}
			})
		}
	}
}

func TestWriterRoundTrip(t *testing.T) {
	lines := []string{`{"a":1}`, `{"a":2}`, `{"a":3}`}
	for _, comp := range append([]string{""}, Compressions...) {
		for _, enc := range []string{"", AES} {
			t.Run(comp+"/"+enc, func(t *testing.T) {
				var file bytes.Buffer
				w, err := NewWriter(&file, comp, enc, testKey)
				if err != nil {
					t.Fatal(err)
				}
				var flushed int
				for _, l := range lines {
					if _, err := io.WriteString(w, l+"\n"); err != nil {
						t.Fatal(err)
					}
					if err := w.Flush(); err != nil {
						t.Fatal(err)
					}
					if file.Len() <= flushed {
						t.Fatalf("flush after %q wrote nothing to the file", l)
					}
					flushed = file.Len()
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				b := file.Bytes()
				if enc == AES {
					block, _ := aes.NewCipher(testKey)
					plain := make([]byte, len(b)-aes.BlockSize)
					cipher.NewCFBDecrypter(block, b[:aes.BlockSize]).XORKeyStream(plain, b[aes.BlockSize:])
					b = plain
				}
				want := strings.Join(lines, "\n") + "\n"
				if got := string(decompress(t, comp, b)); got != want {
					t.Fatalf("got %q, want %q", got, want)
				}
			})
		}
	}
}

func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		name, comp, enc string
		key             []byte
		want            string
	}{
		{"unknown compression", "snappy", "", nil, `"snappy" is not one of gzip`},
		{"unknown encryption", "", "des", testKey, `"des" is not supported`},
		{"aes without key", "", AES, nil, "basic.aesKey"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := NewTransformer(c.comp, c.enc, c.key); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewTransformer: %v, want %q", err, c.want)
			}
			if _, err := NewWriter(io.Discard, c.comp, c.enc, c.key); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewWriter: %v, want %q", err, c.want)
			}
		})
	}
}

func TestParseAESKey(t *testing.T) {
	for _, n := range []int{16, 24, 32} {
		k := bytes.Repeat([]byte{7}, n)
		got, err := ParseAESKey(base64.StdEncoding.EncodeToString(k))
		if err != nil || !bytes.Equal(got, k) {
			t.Fatalf("%d bytes: %v %x", n, err, got)
		}
	}
	if k, err := ParseAESKey(""); err != nil || k != nil {
		t.Fatalf("empty: %v %x", err, k)
	}
	if _, err := ParseAESKey(base64.StdEncoding.EncodeToString(make([]byte, 10))); err == nil || !strings.Contains(err.Error(), "10 bytes") {
		t.Fatalf("10 bytes: %v", err)
	}
	if _, err := ParseAESKey("not base64!"); err == nil || !strings.Contains(err.Error(), "base64") {
		t.Fatalf("bad base64: %v", err)
	}
}
