// Package checkpoint stores rule checkpoints durably and coordinates their
// barriers. A checkpoint holds the snapshot of every stateful operator, the
// rule-level state and every source's offset at one barrier; it is written
// atomically (tmp file, fsync, rename, fsync of the folder), checksummed,
// versioned and tagged with the rule id and a fingerprint of the rule's
// definition, so it is never restored into a different rule.
package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/value"
)

// Checkpoint is one complete, durable checkpoint of a rule.
type Checkpoint struct {
	ID          uint64
	RuleID      string
	Fingerprint string
	// Ops maps "<index>:<operator>" to the operator's snapshot.
	Ops map[string][]byte
	// State holds rule-level state by name.
	State map[string][]byte
	// Offsets maps source keys to their offsets at the barrier.
	Offsets map[string][]byte
	// TakenAt is the engine clock time (ms) when the barrier was injected.
	TakenAt int64
}

// Errors of the store.
var (
	// ErrNotFound: the rule has no checkpoint.
	ErrNotFound = errors.New("no checkpoint")
	// ErrMismatch: the checkpoint belongs to another rule or definition.
	ErrMismatch = errors.New("checkpoint does not match the rule")
	// ErrCorrupt: a checkpoint file failed its checksum or could not be read.
	ErrCorrupt = errors.New("corrupt checkpoint")
)

const (
	magic         = "RKCP"
	formatVersion = 1
	filePrefix    = "ckpt-"
	fileSuffix    = ".bin"
)

// Store keeps checkpoints in files under Dir/rule_<rule id>/checkpoints/,
// inside the rule's data folder that the daemon removes with the rule.
type Store struct {
	Dir string
	// Keep is how many complete checkpoints to keep per rule (default 2).
	Keep int
	// Fence, when set, is asked before each checkpoint is written whether
	// this daemon may still commit for the rule (cluster placement: it
	// still holds the rule's lease); an error abandons the checkpoint, so
	// transactional sinks do not commit it either. Set it before any rule
	// starts.
	Fence func(ruleID string) error
}

func (s *Store) ruleDir(ruleID string) string {
	return filepath.Join(s.Dir, "rule_"+guard.PathElem(ruleID), "checkpoints")
}

// Save writes cp durably: a crash at any point leaves either the previous
// checkpoints or the new one complete. Older checkpoints beyond Keep are
// removed afterwards. It returns the size written.
func (s *Store) Save(cp *Checkpoint) (int, error) {
	if s.Fence != nil {
		if err := s.Fence(cp.RuleID); err != nil {
			return 0, fmt.Errorf("save checkpoint %d of rule %s: %w", cp.ID, cp.RuleID, err)
		}
	}
	dir := s.ruleDir(cp.RuleID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("save checkpoint %d of rule %s: %w", cp.ID, cp.RuleID, err)
	}
	data := encode(cp)
	final := filepath.Join(dir, fmt.Sprintf("%s%020d%s", filePrefix, cp.ID, fileSuffix))
	tmp := final + ".tmp"
	if err := writeSync(tmp, data); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("save checkpoint %d of rule %s: %w", cp.ID, cp.RuleID, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("save checkpoint %d of rule %s: rename: %w", cp.ID, cp.RuleID, err)
	}
	if err := syncDir(dir); err != nil {
		return 0, fmt.Errorf("save checkpoint %d of rule %s: sync folder: %w", cp.ID, cp.RuleID, err)
	}
	s.prune(dir)
	return len(data), nil
}

func writeSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync: %w", err)
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (s *Store) ids(dir string) []uint64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var ids []uint64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, filePrefix) || !strings.HasSuffix(name, fileSuffix) {
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, filePrefix), fileSuffix), 10, 64)
		if err == nil {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] > ids[j] })
	return ids
}

func (s *Store) prune(dir string) {
	keep := s.Keep
	if keep <= 0 {
		keep = 2
	}
	committed, hasCommitted := readCommitted(dir)
	ids := s.ids(dir)
	for i := keep; i < len(ids); i++ {
		if hasCommitted && ids[i] == committed {
			continue // the last committed checkpoint is the fallback of restore
		}
		os.Remove(filepath.Join(dir, fmt.Sprintf("%s%020d%s", filePrefix, ids[i], fileSuffix)))
	}
	// Leftovers of interrupted writes.
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) > 0 {
		for _, t := range tmps {
			os.Remove(t)
		}
	}
}

// Latest returns the newest readable checkpoint of the rule whose
// fingerprint matches. A corrupt newest file is skipped in favour of the
// previous one; a checkpoint for another fingerprint is ErrMismatch.
func (s *Store) Latest(ruleID, fingerprint string) (*Checkpoint, error) {
	dir := s.ruleDir(ruleID)
	var firstErr error
	for _, id := range s.ids(dir) {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s%020d%s", filePrefix, id, fileSuffix)))
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("read checkpoint %d of rule %s: %w", id, ruleID, err)
			}
			continue
		}
		cp, err := decode(data)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("checkpoint %d of rule %s: %w", id, ruleID, err)
			}
			continue
		}
		if cp.RuleID != ruleID || cp.Fingerprint != fingerprint {
			return nil, fmt.Errorf("checkpoint %d of rule %s: %w", id, ruleID, ErrMismatch)
		}
		return cp, nil
	}
	if firstErr != nil {
		return nil, fmt.Errorf("%w (%w)", ErrNotFound, firstErr)
	}
	return nil, fmt.Errorf("rule %s: %w", ruleID, ErrNotFound)
}

// MarkCommitted records that checkpoint id's transactional sinks committed
// (atomically: tmp file, fsync, rename). Restore of a rule with
// transactional sinks uses the last committed checkpoint, so that a
// checkpoint whose transaction never committed is replayed, not skipped.
func (s *Store) MarkCommitted(ruleID string, id uint64) error {
	dir := s.ruleDir(ruleID)
	path := filepath.Join(dir, "committed")
	if err := writeSync(path+".tmp", []byte(strconv.FormatUint(id, 10))); err != nil {
		return fmt.Errorf("mark checkpoint %d committed: %w", id, err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("mark checkpoint %d committed: %w", id, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("mark checkpoint %d committed: %w", id, err)
	}
	return nil
}

// Committed returns the last checkpoint id marked committed.
func (s *Store) Committed(ruleID string) (uint64, bool) {
	return readCommitted(s.ruleDir(ruleID))
}

func readCommitted(dir string) (uint64, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "committed"))
	if err != nil {
		return 0, false
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return id, err == nil
}

// Load returns checkpoint id of the rule, checked like Latest.
func (s *Store) Load(ruleID, fingerprint string, id uint64) (*Checkpoint, error) {
	data, err := os.ReadFile(filepath.Join(s.ruleDir(ruleID), fmt.Sprintf("%s%020d%s", filePrefix, id, fileSuffix)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint %d of rule %s: %w", id, ruleID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %d of rule %s: %w", id, ruleID, err)
	}
	return decodeFor(data, ruleID, fingerprint, id)
}

// decodeFor decodes checkpoint id of a rule, stored as data, and checks
// that it belongs to the rule and its definition (fingerprint).
func decodeFor(data []byte, ruleID, fingerprint string, id uint64) (*Checkpoint, error) {
	cp, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %d of rule %s: %w", id, ruleID, err)
	}
	if cp.RuleID != ruleID || cp.Fingerprint != fingerprint {
		return nil, fmt.Errorf("checkpoint %d of rule %s: %w", id, ruleID, ErrMismatch)
	}
	return cp, nil
}

// Delete removes every checkpoint of the rule.
func (s *Store) Delete(ruleID string) error {
	if err := os.RemoveAll(s.ruleDir(ruleID)); err != nil {
		return fmt.Errorf("delete checkpoints of rule %s: %w", ruleID, err)
	}
	return nil
}

func encode(cp *Checkpoint) []byte {
	body := value.AppendString(nil, cp.RuleID)
	body = value.AppendString(body, cp.Fingerprint)
	body = binary.AppendUvarint(body, cp.ID)
	body = binary.AppendVarint(body, cp.TakenAt)
	for _, m := range []map[string][]byte{cp.Ops, cp.State, cp.Offsets} {
		obj := make(map[string]any, len(m))
		for k, v := range m {
			obj[k] = v
		}
		body = value.AppendObject(body, obj)
	}
	out := make([]byte, 0, len(body)+13)
	out = append(out, magic...)
	out = append(out, formatVersion)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(body)))
	out = append(out, body...)
	return binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(body))
}

func decode(data []byte) (*Checkpoint, error) {
	if len(data) < 13 || string(data[:4]) != magic {
		return nil, fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	if data[4] != formatVersion {
		return nil, fmt.Errorf("%w: unsupported format version %d", ErrCorrupt, data[4])
	}
	n := binary.LittleEndian.Uint32(data[5:9])
	if uint64(n)+13 != uint64(len(data)) {
		return nil, fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	body := data[9 : 9+n]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(data[9+n:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	r := value.NewReader(body)
	cp := &Checkpoint{RuleID: r.String(), Fingerprint: r.String()}
	cp.ID = r.Uvarint()
	cp.TakenAt = r.Varint()
	maps := []*map[string][]byte{&cp.Ops, &cp.State, &cp.Offsets}
	for _, m := range maps {
		obj := r.Object()
		*m = make(map[string][]byte, len(obj))
		for k, v := range obj {
			b, _ := v.([]byte)
			(*m)[k] = b
		}
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return cp, nil
}
