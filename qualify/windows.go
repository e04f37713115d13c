package qualify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// WindowKey identifies one window result: a group key and the window start.
type WindowKey struct {
	Key   string
	Start int64
}

// WindowValue is what a count/sum window reports.
type WindowValue struct {
	Count int64
	Sum   int64
}

// Record is one input record of the window scenario.
type Record struct {
	Seq int64  `json:"seq"`
	Key string `json:"key"`
	V   int64  `json:"v"`
	TS  int64  `json:"ts"`
}

// GenerateRecords makes n records, one every stepMS of event time from
// base, spread over keys groups.
func GenerateRecords(n, keys int, base, stepMS int64) []Record {
	out := make([]Record, n)
	for i := range out {
		out[i] = Record{Seq: int64(i), Key: fmt.Sprintf("k%d", i%keys), V: int64(i % 97), TS: base + int64(i)*stepMS}
	}
	return out
}

// WriteNDJSON writes records one JSON object per line.
func WriteNDJSON(path string, recs []Record) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// ExpectedWindows computes the count and sum per key of every tumbling
// event-time window of sizeMS that a watermark equal to the last record's
// time closes (lateTolerance 0).
func ExpectedWindows(recs []Record, sizeMS int64) map[WindowKey]WindowValue {
	return ExpectedWindowsBy(recs, sizeMS, func(Record) int { return 0 })
}

// ExpectedWindowsBy is ExpectedWindows for a rule that runs as one task
// per input partition, each with its own watermark and its own first
// window: a window of a key in partition part(r) closes once that
// partition's newest record reaches its end, and the first window of a
// task reports as its start its first record's time (as eKuiper reports
// the first event-time window), not the aligned boundary.
func ExpectedWindowsBy(recs []Record, sizeMS int64, part func(Record) int) map[WindowKey]WindowValue {
	out := map[WindowKey]WindowValue{}
	wm, first := map[int]int64{}, map[int]int64{}
	for _, r := range recs {
		p := part(r)
		wm[p] = max(wm[p], r.TS)
		if f, ok := first[p]; !ok || r.TS < f {
			first[p] = r.TS
		}
	}
	for _, r := range recs {
		start := r.TS - r.TS%sizeMS
		if start+sizeMS > wm[part(r)] {
			continue
		}
		if f := first[part(r)]; start < f {
			start = f
		}
		k := WindowKey{Key: r.Key, Start: start}
		v := out[k]
		v.Count++
		v.Sum += r.V
		out[k] = v
	}
	return out
}

// WindowReport compares observed window results with the expected ones.
type WindowReport struct {
	Expected    int `json:"expected_windows"`
	Exact       int `json:"exact_windows"`
	Missing     int `json:"missing_windows"`
	Wrong       int `json:"wrong_windows"`      // a result differing from the expected one
	Unexpected  int `json:"unexpected_windows"` // results for windows that should not exist
	Duplicates  int `json:"duplicate_results"`  // identical repeats (sink duplicates)
	Unreadable  int `json:"unreadable_fragments"`
	FirstErrors []string
}

// OK reports whether every window is exact (identical duplicates allowed).
func (r WindowReport) OK() bool {
	return r.Missing == 0 && r.Wrong == 0 && r.Unexpected == 0 && r.Exact == r.Expected
}

// ReadWindowResults parses a lines file written by the file sink: one JSON
// array of rows per line. A line torn by a SIGKILL is skipped up to the next
// complete array on it (what was torn is replayed after the restart).
func ReadWindowResults(path string) (map[WindowKey][]WindowValue, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	out := map[WindowKey][]WindowValue{}
	torn := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		rows, ok := parseRows(line)
		for !ok {
			i := bytes.Index(line[1:], []byte("[{"))
			if i < 0 {
				torn++
				break
			}
			torn++
			line = line[i+1:]
			rows, ok = parseRows(line)
		}
		for _, r := range rows {
			k := WindowKey{Key: r.Key, Start: r.WS}
			out[k] = append(out[k], WindowValue{Count: r.C, Sum: r.S})
		}
	}
	return out, torn, sc.Err()
}

type resultRow struct {
	Key string `json:"key"`
	C   int64  `json:"c"`
	S   int64  `json:"s"`
	WS  int64  `json:"ws"`
}

func parseRows(line []byte) ([]resultRow, bool) {
	var rows []resultRow
	if err := json.Unmarshal(line, &rows); err != nil {
		return nil, false
	}
	return rows, true
}

// CompareWindows checks observed results against the expected windows.
func CompareWindows(expected map[WindowKey]WindowValue, observed map[WindowKey][]WindowValue, torn int) WindowReport {
	rep := WindowReport{Expected: len(expected), Unreadable: torn}
	keys := make([]WindowKey, 0, len(expected))
	for k := range expected {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Start != keys[j].Start {
			return keys[i].Start < keys[j].Start
		}
		return keys[i].Key < keys[j].Key
	})
	note := func(format string, args ...any) {
		if len(rep.FirstErrors) < 10 {
			rep.FirstErrors = append(rep.FirstErrors, fmt.Sprintf(format, args...))
		}
	}
	for _, k := range keys {
		want := expected[k]
		got := observed[k]
		if len(got) == 0 {
			rep.Missing++
			note("window %s@%d missing (want count %d sum %d)", k.Key, k.Start, want.Count, want.Sum)
			continue
		}
		exact := true
		for _, g := range got {
			if g != want {
				exact = false
				note("window %s@%d: got count %d sum %d, want %d/%d", k.Key, k.Start, g.Count, g.Sum, want.Count, want.Sum)
			}
		}
		if exact {
			rep.Exact++
		} else {
			rep.Wrong++
		}
		rep.Duplicates += len(got) - 1
	}
	// Unexpected windows get notes of their own: a shifted window shows
	// as one missing and one unexpected.
	noted := 0
	for k, got := range observed {
		if _, ok := expected[k]; !ok {
			rep.Unexpected += len(got)
			if noted < 5 {
				rep.FirstErrors = append(rep.FirstErrors, fmt.Sprintf("unexpected window %s@%d: count %d sum %d", k.Key, k.Start, got[0].Count, got[0].Sum))
				noted++
			}
		}
	}
	return rep
}
