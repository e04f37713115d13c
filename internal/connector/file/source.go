package file

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/payload"
	"github.com/rekuiper/rekuiper/internal/value"
)

// maxDecompressedFile bounds a decompressed file (1 GiB); files are read
// into memory whole.
const maxDecompressedFile = 1 << 30

// Actions after a file was read completely.
const (
	actionKeep   int64 = 0
	actionDelete int64 = 1
	actionMove   int64 = 2
)

// SourceSpec is the file source's property spec.
func SourceSpec() connector.Spec {
	return connector.Spec{Props: []connector.Prop{
		{Name: "datasource", Type: connector.TypeString, Doc: "file name inside path; empty reads every file of the folder in name order"},
		{Name: "path", Type: connector.TypeString, Default: "data", Doc: "folder; relative to the data directory (\"data\" is the data directory)"},
		{Name: "fileType", Type: connector.TypeString, Default: typeJSON, Enum: []any{typeJSON, typeCSV, typeLines}},
		{Name: "hasHeader", Type: connector.TypeBool, Default: false, Doc: "csv: the first line holds the column names"},
		{Name: "columns", Type: connector.TypeList, Doc: "csv: column names when there is no header (default cols0, cols1, ...)"},
		{Name: "delimiter", Type: connector.TypeString, Default: ",", Doc: "csv: field delimiter (one character)"},
		{Name: "interval", Type: connector.TypeDuration, Default: 0, Doc: "re-read the files every interval; 0 reads once and ends the stream"},
		{Name: "sendInterval", Type: connector.TypeDuration, Default: 0, Doc: "pause between two records"},
		{Name: "ignoreStartLines", Type: connector.TypeInt, Default: 0, Doc: "csv/lines: lines skipped at the start of each file"},
		{Name: "ignoreEndLines", Type: connector.TypeInt, Default: 0, Doc: "csv/lines: lines skipped at the end of each file"},
		{Name: "actionAfterRead", Type: connector.TypeInt, Default: actionKeep, Enum: []any{actionKeep, actionDelete, actionMove}, Doc: "0 keep, 1 delete, 2 move to moveTo"},
		{Name: "moveTo", Type: connector.TypeString, Doc: "folder for actionAfterRead=2"},
		{Name: "isTable", Type: connector.TypeBool, Default: false, Doc: "accepted for eKuiper compatibility; no effect"},
		{Name: "parallel", Type: connector.TypeBool, Default: false, Doc: "false (the only value): the files of a folder are read one after the other, in name order"},
		{Name: "decompression", Type: connector.TypeString, Default: "", Enum: []any{"", payload.Gzip, payload.Zstd, payload.Zlib, payload.Flate}, Doc: "decompress each file before parsing it"},
	}}
}

// Source reads records from files. JSON files (an array of objects, or
// objects one after the other) give one Payload per object; lines files one
// Payload per non-empty line; csv files one Data row of strings per line.
// Each file is read into memory when it is opened.
//
// It starts no goroutine: Read does the I/O and waits on the clock for
// interval and sendInterval. Nothing stays open between Reads. It is
// Rewindable by record index within a file: {"v":1,"file":"a.csv","i":3}.
type Source struct {
	dir, name    string
	fileType     string
	hasHeader    bool
	columns      []string
	delimiter    rune
	interval     time.Duration
	sendInterval time.Duration
	ignoreStart  int
	ignoreEnd    int
	decompress   string
	action       int64
	moveTo       string
	guard        *guard.Guard
	clk          clock.Clock
	logger       *slog.Logger
	connected    bool
	pending      []string // files left in this pass
	passStart    time.Time
	passed       bool // a pass was started before
	cur          string
	records      []*api.Message
	idx          int
	lastSend     time.Time
	sentInPass   bool
	rewind       *offset
	curFinished  bool
}

var (
	_ api.Source     = (*Source)(nil)
	_ api.Rewindable = (*Source)(nil)
)

// NewSource builds a file source from validated props.
func NewSource(props map[string]any, deps connector.Deps) (api.Source, error) {
	if deps.Clock == nil {
		return nil, errors.New("clock not available")
	}
	s := &Source{
		dir:          resolve(deps.DataDir, connector.Get[string](props, "path")),
		name:         connector.Get[string](props, "datasource"),
		fileType:     connector.Get[string](props, "fileType"),
		hasHeader:    connector.Get[bool](props, "hasHeader"),
		interval:     connector.Get[time.Duration](props, "interval"),
		sendInterval: connector.Get[time.Duration](props, "sendInterval"),
		ignoreStart:  int(connector.Get[int64](props, "ignoreStartLines")),
		ignoreEnd:    int(connector.Get[int64](props, "ignoreEndLines")),
		action:       connector.Get[int64](props, "actionAfterRead"),
		guard:        deps.Guard,
		decompress:   connector.Get[string](props, "decompression"),
		clk:          deps.Clock,
		logger:       deps.Logger,
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if connector.Get[bool](props, "parallel") {
		return nil, errors.New("parallel: true is not supported; the files of a folder are read one after the other in name order (set parallel: false or remove it)")
	}
	d := connector.Get[string](props, "delimiter")
	if utf8.RuneCountInString(d) != 1 {
		return nil, fmt.Errorf("delimiter %q must be one character", d)
	}
	s.delimiter, _ = utf8.DecodeRuneInString(d)
	for _, c := range connector.Get[[]any](props, "columns") {
		s.columns = append(s.columns, value.ToString(c))
	}
	if s.ignoreStart < 0 || s.ignoreEnd < 0 {
		return nil, errors.New("ignoreStartLines and ignoreEndLines must not be negative")
	}
	if s.action == actionMove {
		mv := connector.Get[string](props, "moveTo")
		if mv == "" {
			return nil, errors.New("moveTo is required when actionAfterRead is 2")
		}
		s.moveTo = resolve(deps.DataDir, mv)
	}
	if err := CheckPaths(deps.Guard, deps.DataDir, connector.KindSource, props); err != nil {
		return nil, err
	}
	return s, nil
}

// Connect checks that the folder (and the file, when named) exists and, for
// actionAfterRead=2, creates moveTo.
func (s *Source) Connect(context.Context) error {
	target := s.dir
	if s.name != "" && !s.passed && s.rewind == nil {
		target = filepath.Join(s.dir, s.name)
	}
	if _, err := s.guard.Stat("path", target); err != nil {
		return fmt.Errorf("open file source: %w", err)
	}
	if s.moveTo != "" {
		if err := s.guard.MkdirAll("moveTo", s.moveTo, 0o755); err != nil {
			return fmt.Errorf("create moveTo folder: %w", err)
		}
	}
	s.connected = true
	return nil
}

// Read returns the next record. With interval 0 it returns io.EOF once every
// file was read; otherwise it waits for the next pass.
func (s *Source) Read(ctx context.Context) (*api.Message, error) {
	if !s.connected {
		return nil, errors.New("file source not connected")
	}
	for {
		if s.cur != "" && s.idx < len(s.records) {
			if s.sentInPass && s.sendInterval > 0 {
				if err := connector.WaitUntil(ctx, s.clk, s.lastSend.Add(s.sendInterval)); err != nil {
					return nil, err
				}
			}
			m := s.records[s.idx]
			s.idx++
			s.lastSend = s.clk.Now()
			s.sentInPass = true
			return m, nil
		}
		if s.cur != "" && !s.curFinished {
			s.curFinished = true
			if err := s.afterRead(s.cur); err != nil {
				return nil, err
			}
		}
		if len(s.pending) == 0 {
			if err := s.startPass(ctx); err != nil {
				return nil, err
			}
			continue
		}
		name := s.pending[0]
		s.pending = s.pending[1:]
		if err := s.open(name); err != nil {
			return nil, err
		}
	}
}

// startPass lists the files of the next pass, waiting for interval after
// the first pass, or returns io.EOF when interval is 0.
func (s *Source) startPass(ctx context.Context) error {
	if s.passed {
		if s.interval == 0 {
			return io.EOF
		}
		if err := connector.WaitUntil(ctx, s.clk, s.passStart.Add(s.interval)); err != nil {
			return err
		}
	}
	s.passed = true
	s.passStart = s.clk.Now()
	s.sentInPass = false
	files, err := s.list()
	if err != nil {
		return err
	}
	if r := s.rewind; r != nil {
		s.rewind = nil
		files = slices.DeleteFunc(files, func(f string) bool { return f < r.File })
		if len(files) > 0 && files[0] == r.File {
			s.pending = files
			name := s.pending[0]
			s.pending = s.pending[1:]
			if err := s.open(name); err != nil {
				return err
			}
			s.idx = min(r.I, len(s.records))
			return nil
		}
	}
	s.pending = files
	return nil
}

func (s *Source) list() ([]string, error) {
	if s.name != "" {
		if _, err := s.guard.Stat("path", filepath.Join(s.dir, s.name)); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		} else if err != nil {
			return nil, fmt.Errorf("stat %s: %w", s.name, err)
		}
		return []string{s.name}, nil
	}
	entries, err := s.guard.ReadDir("path", s.dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.dir, err)
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			files = append(files, e.Name())
		}
	}
	slices.Sort(files)
	return files, nil
}

func (s *Source) open(name string) error {
	// A file of the folder may be a symlink to a file outside it: the
	// guard refuses it.
	b, err := s.guard.ReadFile("path", filepath.Join(s.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		b = nil
	} else if errors.Is(err, guard.ErrOutside) {
		return err
	} else if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if s.decompress != "" && len(b) > 0 {
		if b, err = payload.Decompress(s.decompress, b, maxDecompressedFile); err != nil {
			return fmt.Errorf("decompress %s: %w", name, err)
		}
	}
	recs, err := s.parse(b)
	if err != nil {
		return fmt.Errorf("parse %s: %w", name, err)
	}
	meta := map[string]any{"file": name}
	for _, r := range recs {
		r.Meta = meta
	}
	s.cur, s.records, s.idx, s.curFinished = name, recs, 0, false
	return nil
}

func (s *Source) afterRead(name string) error {
	p := filepath.Join(s.dir, name)
	switch s.action {
	case actionDelete:
		if err := s.guard.Remove("path", p); errors.Is(err, guard.ErrOutside) {
			return err
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete %s after read: %w", name, err)
		}
	case actionMove:
		if err := s.guard.Rename("path", p, "moveTo", filepath.Join(s.moveTo, name)); errors.Is(err, guard.ErrOutside) {
			return err
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("move %s after read: %w", name, err)
		}
	}
	return nil
}

func (s *Source) parse(b []byte) ([]*api.Message, error) {
	switch s.fileType {
	case typeJSON:
		return parseJSON(b)
	case typeLines:
		var out []*api.Message
		for _, l := range s.lines(b) {
			if len(bytes.TrimSpace(l)) > 0 {
				out = append(out, &api.Message{Payload: l})
			}
		}
		return out, nil
	case typeCSV:
		return s.parseCSV(b)
	}
	return nil, fmt.Errorf("unsupported fileType %q", s.fileType)
}

// lines splits b into lines without terminators and drops the ignored ones.
func (s *Source) lines(b []byte) [][]byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) == 0 {
		return nil
	}
	ls := bytes.Split(b, []byte("\n"))
	for i, l := range ls {
		ls[i] = bytes.TrimSuffix(l, []byte("\r"))
	}
	if s.ignoreStart+s.ignoreEnd >= len(ls) {
		return nil
	}
	return ls[s.ignoreStart : len(ls)-s.ignoreEnd]
}

func (s *Source) parseCSV(b []byte) ([]*api.Message, error) {
	r := csv.NewReader(bytes.NewReader(bytes.Join(s.lines(b), []byte("\n"))))
	r.Comma = s.delimiter
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	cols := s.columns
	if s.hasHeader && len(recs) > 0 {
		cols, recs = recs[0], recs[1:]
	}
	out := make([]*api.Message, 0, len(recs))
	for _, rec := range recs {
		row := make(map[string]any, len(rec))
		for i, f := range rec {
			if i < len(cols) {
				row[cols[i]] = f
			} else {
				row[fmt.Sprintf("cols%d", i)] = f
			}
		}
		out = append(out, &api.Message{Data: row})
	}
	return out, nil
}

// parseJSON accepts one JSON array of objects or a sequence of JSON objects
// (newline-delimited or not); each object becomes one compact Payload.
func parseJSON(b []byte) ([]*api.Message, error) {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 {
		return nil, nil
	}
	var raws []json.RawMessage
	if trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &raws); err != nil {
			return nil, err
		}
	} else {
		d := json.NewDecoder(bytes.NewReader(trimmed))
		for {
			var r json.RawMessage
			if err := d.Decode(&r); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, err
			}
			raws = append(raws, r)
		}
	}
	out := make([]*api.Message, 0, len(raws))
	for i, r := range raws {
		var c bytes.Buffer
		if err := json.Compact(&c, r); err != nil {
			return nil, err
		}
		if c.Len() == 0 || c.Bytes()[0] != '{' {
			return nil, fmt.Errorf("record %d is not an object", i)
		}
		out = append(out, &api.Message{Payload: c.Bytes()})
	}
	return out, nil
}

// Close forgets the pass in progress; the next Connect and Read continue
// from the current offset.
func (s *Source) Close(context.Context) error {
	s.connected = false
	return nil
}

type offset struct {
	V    int    `json:"v"`
	File string `json:"file"`
	I    int    `json:"i"`
}

// Offset returns the file and index of the next record.
func (s *Source) Offset() ([]byte, error) {
	if r := s.rewind; r != nil {
		return json.Marshal(r)
	}
	return json.Marshal(offset{V: 1, File: s.cur, I: s.idx})
}

// Rewind makes the next pass start at the offset: files sorted before its
// file are skipped, and its file resumes at record i.
func (s *Source) Rewind(b []byte) error {
	var o offset
	if err := connector.DecodeOffset("file", b, &o); err != nil {
		return err
	}
	if o.I < 0 {
		return fmt.Errorf("decode file offset: negative index %d", o.I)
	}
	s.rewind = &o
	s.pending, s.cur, s.records, s.idx = nil, "", nil, 0
	s.passed = false
	return nil
}
