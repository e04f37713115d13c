package format

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// checkNumber decodes the JSON number s and fails unless it gives what
// strconv gives: the int64 of an integer that fits, else the float64 of
// the same bits (or a range error where strconv reports one).
func checkNumber(t *testing.T, s string) {
	t.Helper()
	got, err := NewJSON().DecodeValue([]byte(s))
	if !strings.ContainsAny(s, ".eE") {
		if want, perr := strconv.ParseInt(s, 10, 64); perr == nil {
			if err != nil || got != want {
				t.Fatalf("%s decodes to %#v, %v; want int64 %d", s, got, err, want)
			}
			return
		}
	}
	want, perr := strconv.ParseFloat(s, 64)
	if perr != nil {
		if err == nil {
			t.Fatalf("%s decodes to %#v; strconv: %v", s, got, perr)
		}
		return
	}
	f, ok := got.(float64)
	if err != nil || !ok || math.Float64bits(f) != math.Float64bits(want) {
		t.Fatalf("%s decodes to %#v, %v; want float64 %v (bits %#x)", s, got, err, want, math.Float64bits(want))
	}
}

func TestNumberMatchesStrconv(t *testing.T) {
	for _, s := range []string{
		"0", "-0", "0.0", "-0.0", "0e0", "-0e-5", "1", "23.57", "-23.57", "0.1", "0.30000000000000004",
		"9007199254740991", "9007199254740992", "9007199254740993", "9007199254740991.5",
		"900719925474099.1", "9007199254740993e-5", "1e22", "1e23", "1.5e22", "-1e-22", "1e-23",
		"123456789012345678.9", "12345678901234567890", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "-9223372036854775809", "4.9e-324", "5e-324", "1.7976931348623157e308",
		"1.7976931348623159e308", "1e400", "-1e400", "2.2250738585072011e-308", "0.000000000000000000001",
		"1.00000000000000000000000001", "100000000000000000000000e-22", "-12.5E-3", "3E+2", "7e0000000000000000001",
		"1e-99999999999", "0.000000000000000000000000000000000000000001e40",
	} {
		checkNumber(t, s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var s string
		switch r.IntN(5) {
		case 0: // any float64, shortest form
			f := math.Float64frombits(r.Uint64())
			if math.IsNaN(f) || math.IsInf(f, 0) {
				continue
			}
			s = strconv.FormatFloat(f, 'g', -1, 64)
		case 1: // a reading with a few decimals
			s = strconv.FormatFloat(r.NormFloat64()*math.Pow(10, float64(r.IntN(12)-4)), 'f', r.IntN(8), 64)
		case 2: // exponent form, random precision
			s = strconv.FormatFloat(r.NormFloat64()*math.Pow(10, float64(r.IntN(60)-30)), 'e', r.IntN(20), 64)
		case 3: // many digits around the fast path's limits
			s = strconv.FormatUint(r.Uint64()>>uint(r.IntN(20)), 10) + "." + strconv.FormatUint(r.Uint64()>>uint(r.IntN(64)), 10)
		default:
			s = strconv.FormatInt(int64(r.Uint64())>>uint(r.IntN(64)), 10) + "e" + strconv.Itoa(r.IntN(60)-30)
		}
		checkNumber(t, s)
	}
}

// FuzzNumber compares decoded numbers with strconv, bit for bit.
func FuzzNumber(f *testing.F) {
	for _, s := range []string{"23.57", "-0.0", "9007199254740993e-5", "1e23", "4.9e-324", "123456789012345678.9", "1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// A number alone: no whitespace around it, nothing else.
		if strings.Trim(s, "0123456789+-.eE") != "" || !json.Valid([]byte(s)) {
			return
		}
		checkNumber(t, s)
	})
}

// TestKeyCacheLookalikes decodes, one after the other on one codec, objects
// whose keys at the same position start alike, differ by an escape or end
// in unexpected places, and compares each with a fresh codec's result: the
// per-position key cache must never answer for a key it does not hold.
func TestKeyCacheLookalikes(t *testing.T) {
	payloads := []string{
		`{"id":1,"temp":2}`, `{"idx":1,"temp":2}`, `{"i":1,"tem":2}`, `{"id":1,"temp":2}`,
		`{"i\u0064":1,"te\"mp":2}`, `{"id\"":1,"temp\\":2}`, `{"id":1,"temp":2}`, `{"id" :1, "temp" :2}`,
		`{"id`, `{"id":1,"temp`, `{"id":1,"temp":2}`, "{\"id\xff\":1}", `{"id":{"id":1,"temp":2}}`,
		`[{"id":1,"temp":2},{"idd":1,"temp":2}]`, `{"id":1,"temp":2}`,
	}
	stream := NewJSONStream([]string{"id", "temp", "idx"})
	c := NewJSON()
	for range 2 {
		for _, p := range payloads {
			want, wantErr := NewJSON().Decode([]byte(p))
			got, err := c.Decode([]byte(p))
			if (err == nil) != (wantErr == nil) || !sameValue(rowsToAny(got, nil), rowsToAny(want, nil), false) {
				t.Fatalf("%s: cached codec gives %#v, %v; a fresh one %#v, %v", p, got, err, want, wantErr)
			}
			checkTuplesMatchDecode(t, stream, []string{"id", "temp", "idx"}, []byte(p))
		}
	}
}
