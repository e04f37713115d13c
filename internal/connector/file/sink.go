package file

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/api"
	"github.com/rekuiper/rekuiper/internal/clock"
	"github.com/rekuiper/rekuiper/internal/connector"
	"github.com/rekuiper/rekuiper/internal/connector/connection"
	"github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/payload"
)

// SinkSpec is the file sink's property spec.
func SinkSpec() connector.Spec {
	return connector.Spec{Props: []connector.Prop{
		{Name: "path", Type: connector.TypeString, Default: "cache", Doc: "file to write; relative to the data directory"},
		{Name: "fileType", Type: connector.TypeString, Default: typeLines, Enum: []any{typeLines, typeJSON, typeCSV}},
		{Name: "hasHeader", Type: connector.TypeBool, Default: false, Doc: "csv: write a header line (sorted field names of the first row) at the top of each file"},
		{Name: "delimiter", Type: connector.TypeString, Default: ",", Doc: "csv: header delimiter"},
		{Name: "rollingInterval", Type: connector.TypeDuration, Default: 0, Doc: "start a new file after this long (0 = never)"},
		{Name: "rollingCount", Type: connector.TypeInt, Default: 1000000, Doc: "start a new file after this many messages (0 = never)"},
		{Name: "rollingNamePattern", Type: connector.TypeString, Default: "none", Enum: []any{"none", "prefix", "suffix"}, Doc: "where the start time in ms goes in rolled file names; none disables rolling"},
		{Name: "compression", Type: connector.TypeString, Default: "", Enum: []any{"", payload.Gzip, payload.Zstd, payload.Zlib, payload.Flate}, Doc: "compress the whole file as one stream"},
		{Name: "encryption", Type: connector.TypeString, Default: "", Enum: []any{"", payload.AES}, Doc: "encrypt the whole file with AES-CFB and basic.aesKey; the file starts with the 16-byte IV"},
	}}
}

// Sink appends each SinkMessage.Payload to a file: one line per message
// for lines and csv, each ending with a line end (eKuiper leaves the last
// one open: docs/compatibility.md), one element of a JSON array for json.
// The file is opened on the first Write after Connect or a roll: lines
// and csv files are appended to (a CSV header goes only into an empty
// file), others truncated. Each Write
// is handed to the OS before it returns; Close writes the JSON array end,
// fsyncs and closes the file. It starts no goroutine. Write errors are
// permanent (not retried), as in eKuiper.
type Sink struct {
	path      string
	fileType  string
	hasHeader bool
	delimiter string
	rollEvery time.Duration
	rollCount int64
	pattern   string
	guard     *guard.Guard
	clk       clock.Clock
	compress  string
	encrypt   string
	key       []byte
	// link is the sink's status: disconnected with the error when the
	// folder or file cannot be created or written, connected after a write.
	link *connection.Link

	f       *os.File
	w       *bufio.Writer
	stream  *payload.Writer // compressor and cipher over w; nil without them
	opened  time.Time
	written int64
	// lineOpen: the appended file's last line has no line end (written
	// by something else), so the first row starts on a new line.
	lineOpen bool
}

var _ api.Sink = (*Sink)(nil)

// NewSink builds a file sink from validated props.
func NewSink(props map[string]any, deps connector.Deps) (api.Sink, error) {
	if deps.Clock == nil {
		return nil, errors.New("clock not available")
	}
	p := connector.Get[string](props, "path")
	if p == "" {
		return nil, errors.New("path is empty")
	}
	if err := CheckPaths(deps.Guard, deps.DataDir, connector.KindSink, props); err != nil {
		return nil, err
	}
	compress, encrypt := connector.Get[string](props, "compression"), connector.Get[string](props, "encryption")
	// Refuse a missing key now, not at the first write.
	if _, err := payload.NewWriter(io.Discard, "", encrypt, deps.AESKey); err != nil {
		return nil, err
	}
	return &Sink{
		compress:  compress,
		encrypt:   encrypt,
		key:       deps.AESKey,
		path:      resolve(deps.DataDir, p),
		fileType:  connector.Get[string](props, "fileType"),
		hasHeader: connector.Get[bool](props, "hasHeader"),
		delimiter: connector.Get[string](props, "delimiter"),
		rollEvery: connector.Get[time.Duration](props, "rollingInterval"),
		rollCount: connector.Get[int64](props, "rollingCount"),
		pattern:   connector.Get[string](props, "rollingNamePattern"),
		guard:     deps.Guard,
		clk:       deps.Clock,
		link:      connection.NewLink(deps.Clock),
	}, nil
}

// Connect creates the file's folder.
func (s *Sink) Connect(context.Context) error {
	if err := s.guard.MkdirAll("path", filepath.Dir(s.path), 0o755); err != nil {
		return s.link.Connect(fmt.Errorf("create folder of %s: %w", s.path, err))
	}
	return nil
}

// Status reports the sink's status (stream.ConnStatus).
func (s *Sink) Status() (state string, lastConnected, lastDisconnected time.Time, lastErr string) {
	return s.link.Status()
}

// PayloadOnly reports whether Write reads only the payload and keeps
// nothing (api.PayloadOnly): always, except for a CSV header, which names
// the columns of a row.
func (s *Sink) PayloadOnly() bool { return !(s.fileType == typeCSV && s.hasHeader) }

// Write appends msg.Payload, rolling to a new file first when due.
func (s *Sink) Write(_ context.Context, msg *api.SinkMessage) error {
	return s.link.Connect(s.write(msg))
}

func (s *Sink) write(msg *api.SinkMessage) error {
	if s.f != nil && s.rollDue() {
		if err := s.closeFile(); err != nil {
			return err
		}
	}
	if s.f == nil {
		if err := s.openFile(msg); err != nil {
			return err
		}
	}
	out := s.out()
	switch {
	case s.fileType == typeJSON && s.written > 0:
		out.Write([]byte{','})
	case s.fileType != typeJSON && s.lineOpen:
		out.Write([]byte{'\n'}) // an appended file's unfinished last line
	}
	out.Write(msg.Payload)
	if s.fileType != typeJSON {
		out.Write([]byte{'\n'})
		s.lineOpen = false
	}
	if err := s.flushStream(); err != nil {
		return fmt.Errorf("write %s: %w", s.f.Name(), err)
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", s.f.Name(), err)
	}
	s.written++
	return nil
}

func (s *Sink) rollDue() bool {
	if s.pattern == "none" {
		return false
	}
	if s.rollCount > 0 && s.written >= s.rollCount {
		return true
	}
	return s.rollEvery > 0 && !s.clk.Now().Before(s.opened.Add(s.rollEvery))
}

func (s *Sink) fileName(now time.Time) string {
	ms := strconv.FormatInt(now.UnixMilli(), 10)
	dir, base := filepath.Split(s.path)
	switch s.pattern {
	case "prefix":
		return filepath.Join(dir, ms+"-"+base)
	case "suffix":
		ext := filepath.Ext(base)
		return filepath.Join(dir, strings.TrimSuffix(base, ext)+"-"+ms+ext)
	}
	return s.path
}

func (s *Sink) openFile(msg *api.SinkMessage) error {
	now := s.clk.Now()
	name := s.fileName(now)
	// Lines and CSV files are appended to, so a restarted rule continues the
	// file; a JSON array file is rewritten whole, and so is a compressed or
	// encrypted file (one stream from its start).
	mode := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if s.fileType == typeJSON || s.compress != "" || s.encrypt != "" {
		mode = os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	}
	f, err := s.guard.OpenFile("path", name, mode, 0o644)
	if errors.Is(err, guard.ErrOutside) {
		return err
	} else if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	// An appended file continues on a new line, and gets no second header.
	empty, lineOpen, err := appendState(f, mode&os.O_APPEND != 0, func() (*os.File, error) {
		return s.guard.OpenFile("path", name, os.O_RDONLY, 0)
	})
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("read end of %s: %w", name, err)
	}
	s.f, s.w, s.opened, s.written, s.lineOpen = f, bufio.NewWriter(f), now, 0, lineOpen
	s.stream = nil
	if s.compress != "" || s.encrypt != "" {
		if s.stream, err = payload.NewWriter(s.w, s.compress, s.encrypt, s.key); err != nil {
			_ = f.Close()
			s.f = nil
			return fmt.Errorf("create %s: %w", name, err)
		}
	}
	out := s.out()
	switch {
	case s.fileType == typeJSON:
		out.Write([]byte{'['})
	case s.fileType == typeCSV && s.hasHeader && len(msg.Rows) > 0 && empty:
		io.WriteString(out, strings.Join(slices.Sorted(maps.Keys(msg.Rows[0])), s.delimiter))
		out.Write([]byte{'\n'})
	}
	return nil
}

// appendState tells whether f, opened for appending or truncated, is
// empty, and whether its last line lacks a line end (read through reopen:
// f is open for writing only).
func appendState(f *os.File, appended bool, reopen func() (*os.File, error)) (empty, lineOpen bool, err error) {
	if !appended {
		return true, false, nil
	}
	st, err := f.Stat()
	if err != nil {
		return false, false, err
	}
	if st.Size() == 0 {
		return true, false, nil
	}
	r, err := reopen()
	if err != nil {
		return false, false, err
	}
	defer r.Close()
	last := make([]byte, 1)
	if _, err := r.ReadAt(last, st.Size()-1); err != nil {
		return false, false, err
	}
	return false, last[0] != '\n', nil
}

// out is where file content goes: the compressor and cipher when set,
// else the buffered file. Write errors surface at the next flush.
func (s *Sink) out() io.Writer {
	if s.stream != nil {
		return s.stream
	}
	return s.w
}

// flushStream pushes what the compressor holds into the file buffer.
func (s *Sink) flushStream() error {
	if s.stream == nil {
		return nil
	}
	return s.stream.Flush()
}

// Flush writes buffered output and fsyncs the file; the engine calls it at
// checkpoint barriers, so everything before a checkpoint is on disk.
func (s *Sink) Flush(ctx context.Context) error {
	if s.f == nil {
		return nil
	}
	if err := s.flushStream(); err != nil {
		return fmt.Errorf("flush %s: %w", s.f.Name(), err)
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("flush %s: %w", s.f.Name(), err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", s.f.Name(), err)
	}
	return nil
}

func (s *Sink) closeFile() error {
	if s.f == nil {
		return nil
	}
	f := s.f
	s.f = nil
	if s.fileType == typeJSON {
		s.out().Write([]byte{']'})
	}
	var err error
	if s.stream != nil {
		err = s.stream.Close()
		s.stream = nil
	}
	if ferr := s.w.Flush(); err == nil {
		err = ferr
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("close %s: %w", f.Name(), err)
	}
	return nil
}

// Close finishes, fsyncs and closes the current file.
func (s *Sink) Close(context.Context) error { return s.closeFile() }
