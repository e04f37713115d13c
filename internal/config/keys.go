package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// A setting that names no key refuses the start: a typo such as
// basic.authenticaton must not start the daemon with authentication off.
// The error names the key and, when one is close, the key meant.

// knownKeys lists the dotted paths of every section and key of struct type
// t, in declaration order, with their YAML spelling. A free-form map is one
// key (what is below it is not checked); the elements of a list of
// sections are below a "[]" segment (rule.cronDatetimeRange.[].begin).
func knownKeys(t reflect.Type) []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case isDuration(t):
		case t.Kind() == reflect.Struct:
			for i := range t.NumField() {
				if name := yamlName(t.Field(i)); name != "" {
					out = append(out, prefix+name)
					walk(t.Field(i).Type, prefix+name+".")
				}
			}
		case t.Kind() == reflect.Slice:
			walk(t.Elem(), prefix+"[].")
		}
	}
	walk(t, "")
	return out
}

// unknownKey describes a key that names no setting: where it was found
// (file:line or the environment variable), its dotted path, and the
// closest known key when one is close enough.
func unknownKey(where, key string, known []string) error {
	if hint := suggestKey(key, known); hint != "" {
		return fmt.Errorf("%s: unknown key %q (did you mean %s?)", where, key, hint)
	}
	return fmt.Errorf("%s: unknown key %q", where, key)
}

// suggestKey returns the known key closest to key by edit distance over
// the whole dotted path, case-insensitively, when the distance is small
// for the part of key that names nothing: at most a third of its length,
// between 1 and 3 edits. Failing that, it returns the only known key whose
// last segment is key's last segment (a key put in the wrong section).
// List indexes in key (rule.cronDatetimeRange.0.bgin) match the "[]"
// segments of known and are put back into the answer.
func suggestKey(key string, known []string) string {
	segs := strings.Split(key, ".")
	norm := make([]string, len(segs))
	for i, s := range segs {
		norm[i] = strings.ToLower(s)
		if isIndex(s) {
			norm[i] = "[]"
		}
	}
	lower := strings.Join(norm, ".")
	lowerKnown := make([]string, len(known))
	for i, k := range known {
		lowerKnown[i] = strings.ToLower(k)
	}
	best, bestDist := -1, 0
	for i, k := range lowerKnown {
		if d := editDistance(lower, k); best < 0 || d < bestDist {
			best, bestDist = i, d
		}
	}
	if best >= 0 && bestDist <= maxEdits(norm, lowerKnown) {
		return withIndexes(known[best], segs)
	}
	last := "." + norm[len(norm)-1]
	found := -1
	for i, k := range lowerKnown {
		if strings.HasSuffix("."+k, last) {
			if found >= 0 {
				return "" // ambiguous
			}
			found = i
		}
	}
	if found < 0 {
		return ""
	}
	return withIndexes(known[found], segs)
}

// maxEdits is how many edits a suggestion may be away from the key whose
// lower-cased segments are norm: a third of the length of the part after
// the longest leading run of segments that is a known key, from 1 to 3.
func maxEdits(norm, lowerKnown []string) int {
	n := 0
	for n < len(norm) && slices.Contains(lowerKnown, strings.Join(norm[:n+1], ".")) {
		n++
	}
	return min(max(len(strings.Join(norm[n:], "."))/3, 1), 3)
}

// withIndexes replaces the "[]" segments of a known key by the list
// indexes at the same places of segs.
func withIndexes(k string, segs []string) string {
	if !strings.Contains(k, "[]") {
		return k
	}
	out := strings.Split(k, ".")
	for i, s := range out {
		if s == "[]" {
			out[i] = "0"
			if i < len(segs) && isIndex(segs[i]) {
				out[i] = segs[i]
			}
		}
	}
	return strings.Join(out, ".")
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// characters (bufferLenght → bufferLength is one edit).
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// rows i-2, i-1 and i of the table.
	prev2, prev, cur := make([]int, len(y)+1), make([]int, len(y)+1), make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}
