package function

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash/crc32"
)

// registerHash adds the hash functions. Each hashes the argument's bytes
// (textOf for non-strings, raw bytes for bytea) and returns lower-case
// hex; nil gives nil. crc32 is the IEEE checksum as 8 zero-padded hex digits.
func registerHash(r *Registry) {
	r.MustAdd(
		hashDef("md5", func(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }),
		hashDef("sha1", func(b []byte) string { s := sha1.Sum(b); return hex.EncodeToString(s[:]) }),
		hashDef("sha256", func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }),
		hashDef("sha384", func(b []byte) string { s := sha512.Sum384(b); return hex.EncodeToString(s[:]) }),
		hashDef("sha512", func(b []byte) string { s := sha512.Sum512(b); return hex.EncodeToString(s[:]) }),
		hashDef("crc32", func(b []byte) string { return fmt.Sprintf("%08x", crc32.ChecksumIEEE(b)) }),
	)
}

func hashDef(name string, sum func([]byte) string) *Def {
	return &Def{
		Name: name, Kind: Scalar, MinArgs: 1, MaxArgs: 1,
		Validate: mathValidateArgs(mathString),
		Scalar: func(_ Env, args []any) (any, error) {
			switch v := args[0].(type) {
			case nil:
				return nil, nil
			case []byte:
				return sum(v), nil
			}
			return sum([]byte(textOf(args[0]))), nil
		},
	}
}
