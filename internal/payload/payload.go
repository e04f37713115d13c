// Package payload owns what is done to an encoded payload after the format
// encoder and before a sink writes it: compression (gzip, zlib, flate,
// zstd) and encryption (AES with basic.aesKey), in eKuiper's byte layout.
//
// A message sink gets each payload compressed, then encrypted, on its own
// (Transformer). A sink that writes one byte stream (the file sink) wraps
// its file in one compressor and one encryptor instead (NewWriter).
package payload

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Compression and encryption methods.
const (
	Gzip  = "gzip"
	Zlib  = "zlib"
	Flate = "flate"
	Zstd  = "zstd"
	AES   = "aes"
)

// Compressions lists the compression methods.
var Compressions = []string{Gzip, Zlib, Flate, Zstd}

// ErrNoAESKey is returned for encryption "aes" when basic.aesKey is not set.
var ErrNoAESKey = errors.New("encryption aes needs basic.aesKey in kuiper.yaml (base64 of a 16, 24 or 32 byte key)")

// ParseAESKey decodes basic.aesKey: standard base64 of a 16, 24 or 32 byte
// key (AES-128, -192, -256). Empty gives a nil key and no error.
func ParseAESKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("basic.aesKey is not standard base64: %w", err)
	}
	switch len(key) {
	case 16, 24, 32:
		return key, nil
	}
	return nil, fmt.Errorf("basic.aesKey decodes to %d bytes, want 16, 24 or 32", len(key))
}

// checkMethods validates a compression and an encryption name; both may be
// empty.
func checkMethods(compression, encryption string, key []byte) error {
	switch compression {
	case "", Gzip, Zlib, Flate, Zstd:
	default:
		return fmt.Errorf("sink property compression: %q is not one of gzip, zlib, flate, zstd", compression)
	}
	switch encryption {
	case "":
	case AES:
		if len(key) == 0 {
			return ErrNoAESKey
		}
		if _, err := aes.NewCipher(key); err != nil {
			return fmt.Errorf("sink property encryption: %w", err)
		}
	default:
		return fmt.Errorf("sink property encryption: %q is not supported (only aes)", encryption)
	}
	return nil
}

// Transformer compresses then encrypts one payload at a time. It keeps
// scratch state, so it is not safe for concurrent use.
type Transformer struct {
	compression string
	gcm         cipher.AEAD
	buf         bytes.Buffer
	zenc        *zstd.Encoder
}

// NewTransformer returns the transformer of a sink's compression and
// encryption properties, or nil when both are empty. key is basic.aesKey
// decoded (ParseAESKey).
func NewTransformer(compression, encryption string, key []byte) (*Transformer, error) {
	if err := checkMethods(compression, encryption, key); err != nil {
		return nil, err
	}
	if compression == "" && encryption == "" {
		return nil, nil
	}
	t := &Transformer{compression: compression}
	if compression == Zstd {
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			return nil, fmt.Errorf("zstd encoder: %w", err)
		}
		t.zenc = enc
	}
	if encryption == AES {
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("sink property encryption: %w", err)
		}
		if t.gcm, err = cipher.NewGCM(block); err != nil {
			return nil, fmt.Errorf("sink property encryption: %w", err)
		}
	}
	return t, nil
}

// Apply returns b compressed, then encrypted. Encryption is AES-GCM with a
// random 12-byte nonce: the result is nonce, ciphertext, 16-byte tag (what
// eKuiper's aes encryption writes for a message sink). b is not modified.
func (t *Transformer) Apply(b []byte) ([]byte, error) {
	if t.compression != "" {
		c, err := t.compress(b)
		if err != nil {
			return nil, fmt.Errorf("compress payload (%s): %w", t.compression, err)
		}
		b = c
	}
	if t.gcm != nil {
		nonce := make([]byte, t.gcm.NonceSize(), t.gcm.NonceSize()+len(b)+t.gcm.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("encrypt payload: %w", err)
		}
		b = t.gcm.Seal(nonce, nonce, b, nil)
	}
	return b, nil
}

func (t *Transformer) compress(b []byte) ([]byte, error) {
	if t.zenc != nil {
		return t.zenc.EncodeAll(b, make([]byte, 0, len(b)/2+64)), nil
	}
	t.buf.Reset()
	w, err := newCompressor(t.compression, &t.buf)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(t.buf.Bytes()), nil
}

// flushWriteCloser is a compressor that can hand out what it has so far.
type flushWriteCloser interface {
	io.WriteCloser
	Flush() error
}

func newCompressor(method string, w io.Writer) (flushWriteCloser, error) {
	switch method {
	case Gzip:
		return gzip.NewWriter(w), nil
	case Zlib:
		return zlib.NewWriter(w), nil
	case Flate:
		return flate.NewWriter(w, flate.DefaultCompression)
	case Zstd:
		return zstd.NewWriter(w)
	}
	return nil, fmt.Errorf("unknown compression %q", method)
}

// Writer compresses and encrypts one byte stream, such as a file. Flush
// hands everything written so far to the underlying writer (a sync flush
// of the compressor); Close ends the compressed stream.
type Writer struct {
	w    io.Writer // what Write writes to: the compressor, the cipher or the file
	comp flushWriteCloser
}

// NewWriter wraps out: data is compressed, then encrypted with AES-CFB. The
// stream starts with the random 16-byte IV, as eKuiper's file sink writes
// it. Both methods may be empty; the key is basic.aesKey decoded. With
// encryption the IV is written to out at once.
func NewWriter(out io.Writer, compression, encryption string, key []byte) (*Writer, error) {
	if err := checkMethods(compression, encryption, key); err != nil {
		return nil, err
	}
	w := &Writer{w: out}
	if encryption == AES {
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("sink property encryption: %w", err)
		}
		iv := make([]byte, aes.BlockSize)
		if _, err := rand.Read(iv); err != nil {
			return nil, fmt.Errorf("encryption iv: %w", err)
		}
		if _, err := out.Write(iv); err != nil {
			return nil, fmt.Errorf("write encryption iv: %w", err)
		}
		//lint:ignore SA1019 CFB is the layout eKuiper's file sink writes; compatibility decides the mode.
		w.w = cipher.StreamWriter{S: cipher.NewCFBEncrypter(block, iv), W: out}
	}
	if compression != "" {
		c, err := newCompressor(compression, w.w)
		if err != nil {
			return nil, err
		}
		w.comp, w.w = c, c
	}
	return w, nil
}

// Write writes p to the stream.
func (w *Writer) Write(p []byte) (int, error) { return w.w.Write(p) }

// Flush pushes what the compressor holds to the underlying writer.
func (w *Writer) Flush() error {
	if w.comp != nil {
		return w.comp.Flush()
	}
	return nil
}

// Close ends the compressed stream; it does not close the underlying
// writer.
func (w *Writer) Close() error {
	if w.comp != nil {
		return w.comp.Close()
	}
	return nil
}

// Decompress returns b decompressed with method (gzip, zlib, flate or
// zstd), refusing output larger than limit bytes.
func Decompress(method string, b []byte, limit int64) ([]byte, error) {
	var r io.Reader
	src := bytes.NewReader(b)
	switch method {
	case Gzip:
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		r = zr
	case Zlib:
		zr, err := zlib.NewReader(src)
		if err != nil {
			return nil, fmt.Errorf("zlib: %w", err)
		}
		r = zr
	case Flate:
		r = flate.NewReader(src)
	case Zstd:
		d, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer d.Close()
		r = d
	default:
		return nil, fmt.Errorf("unknown decompression %q", method)
	}
	out, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if int64(len(out)) > limit {
		return nil, fmt.Errorf("%s: decompressed size exceeds %d bytes", method, limit)
	}
	return out, nil
}
