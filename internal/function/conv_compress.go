package function

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/value"
)

// convMaxDecompressed bounds decompress output so that a small hostile
// payload cannot exhaust memory.
const convMaxDecompressed = 64 << 20

func convValidateCompression(args []ast.Expr) error {
	if err := mathValidateArgs(mathString, mathString)(args); err != nil {
		return err
	}
	if lit, ok := args[1].(*ast.StringLit); ok && !convIsCompression(lit.Val) {
		return fmt.Errorf("unsupported compression method %s, expect zlib, gzip, flate or zstd", lit.Val)
	}
	return nil
}

func convIsCompression(m string) bool {
	switch m {
	case "zlib", "gzip", "flate", "zstd":
		return true
	}
	return false
}

// convCompressArgs reads the arguments of compress and decompress as
// eKuiper does: a nil payload is nil; a payload that is not a string or
// bytea is an error whatever the method; then a nil method is an error
// (there is nothing to compress with).
func convCompressArgs(args []any) (data []byte, method string, isNil bool, err error) {
	if args[0] == nil {
		return nil, "", true, nil
	}
	if data, err = convBytesArg(args[0]); err != nil {
		return nil, "", false, err
	}
	if args[1] == nil {
		return nil, "", false, fmt.Errorf("unsupported compression method: the method is null")
	}
	return data, value.ToString(args[1]), false, nil
}

// convBytesArg accepts the string or bytea payload of compress/decompress.
func convBytesArg(v any) ([]byte, error) {
	switch x := v.(type) {
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	}
	return nil, fmt.Errorf("require string or bytea parameter, but got %s", value.Describe(v))
}

// convCompress implements compress(data, method): the compressed bytes.
// Unlike eKuiper it keeps no per-call state, so the method may vary by row.
func convCompress(_ Env, args []any) (any, error) {
	data, method, isNil, err := convCompressArgs(args)
	if err != nil || isNil {
		return nil, err
	}
	var buf bytes.Buffer
	var w io.WriteCloser
	switch method {
	case "zlib":
		w = zlib.NewWriter(&buf)
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "flate":
		if w, err = flate.NewWriter(&buf, flate.DefaultCompression); err != nil {
			return nil, fmt.Errorf("create flate writer: %w", err)
		}
	case "zstd":
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
		if err != nil {
			return nil, fmt.Errorf("create zstd encoder: %w", err)
		}
		defer enc.Close()
		return enc.EncodeAll(data, nil), nil
	default:
		return nil, fmt.Errorf("unsupported compression method %s", method)
	}
	if _, err := w.Write(data); err != nil {
		return nil, fmt.Errorf("failed to compress: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("failed to compress: %w", err)
	}
	return buf.Bytes(), nil
}

// convDecompress implements decompress(data, method). Errors read
// "failed to decompress: <cause>" as in eKuiper.
func convDecompress(_ Env, args []any) (any, error) {
	data, method, isNil, err := convCompressArgs(args)
	if err != nil || isNil {
		return nil, err
	}
	var r io.ReadCloser
	switch method {
	case "zlib":
		r, err = zlib.NewReader(bytes.NewReader(data))
	case "gzip":
		r, err = gzip.NewReader(bytes.NewReader(data))
	case "flate":
		r = flate.NewReader(bytes.NewReader(data))
	case "zstd":
		var dec *zstd.Decoder
		dec, err = zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err == nil {
			r = dec.IOReadCloser()
		}
	default:
		return nil, fmt.Errorf("unsupported compression method %s", method)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to decompress: %w", err)
	}
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, convMaxDecompressed+1))
	if err != nil {
		return nil, fmt.Errorf("failed to decompress: %w", err)
	}
	if len(out) > convMaxDecompressed {
		return nil, fmt.Errorf("failed to decompress: output exceeds %d bytes", convMaxDecompressed)
	}
	return out, nil
}
