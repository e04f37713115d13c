package function

import (
	"testing"

	"github.com/rekuiper/rekuiper/internal/sql/ast"
)

func TestHashCorpus(t *testing.T) {
	cases := []mathCase{
		// crc32. QUIRK: eKuiper does not zero-pad (crc32("") = "0");
		// rekuiper always writes 8 hex digits.
		{"crc32", "crc32", []any{"hello"}, "3610a686", ""},
		{"crc32", "crc32", []any{""}, "00000000", ""},
		{"crc32", "crc32", []any{"123456789"}, "cbf43926", ""},
		// crc32_leading_zero
		{"crc32_leading_zero", "crc32", []any{"a"}, "e8b7be43", ""},
		{"crc32_leading_zero", "crc32", []any{"abc"}, "352441c2", ""},
		{"crc32_leading_zero", "crc32", []any{"The quick brown fox"}, "b74574de", ""},
		// crc32_no_zero_padding. QUIRK as above: eKuiper "6b9df6f", "e7ddce".
		{"crc32_no_zero_padding", "crc32", []any{"c"}, "06b9df6f", ""},
		{"crc32_no_zero_padding", "crc32", []any{"ae"}, "00e7ddce", ""},
		{"crc32_no_zero_padding", "crc32", []any{"hello"}, "3610a686", ""},
		// hash_nil
		{"hash_nil", "md5", []any{nil}, nil, ""},
		{"hash_nil", "sha256", []any{nil}, nil, ""},
		// md5_sha1
		{"md5_sha1", "md5", []any{"hello"}, "5d41402abc4b2a76b9719d911017c592", ""},
		{"md5_sha1", "sha1", []any{"hello"}, "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d", ""},
		{"md5_sha1", "md5", []any{""}, "d41d8cd98f00b204e9800998ecf8427e", ""},
		{"md5_sha1", "sha1", []any{""}, "da39a3ee5e6b4b0d3255bfef95601890afd80709", ""},
		{"md5_sha1", "md5", []any{"The quick brown fox"}, "a2004f37730b9445670a738fa0fc9ee5", ""},
		{"md5_sha1", "sha1", []any{"The quick brown fox"}, "c519c1a06cdbeb2bc499e22137fb48683858b345", ""},
	}
	mathRunCases(t, cases)
}

func TestHashBehaviour(t *testing.T) {
	cases := []mathCase{
		{"sha256", "sha256", []any{"abc"}, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", ""},
		{"sha384", "sha384", []any{"abc"}, "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7", ""},
		{"sha512", "sha512", []any{"abc"}, "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f", ""},
		{"number as text", "md5", []any{int64(12)}, "c20ad4d76fe97759aa27a0c99bff6710", ""},
		{"bytes", "md5", []any{[]byte("hello")}, "5d41402abc4b2a76b9719d911017c592", ""},
	}
	mathRunCases(t, cases)

	d, _ := Builtins().Lookup("sha1")
	if err := d.Validate([]ast.Expr{&ast.IntegerLit{Val: 1}}); err == nil {
		t.Fatal("sha1(1) literal must be rejected")
	}
}
