// Package catalog keeps the daemon's durable definitions: streams and
// tables, rules with their wanted state, named connections, confKeys,
// schemas and uploads.
//
// Store is the durable layer: SQLiteStore implements it over one SQLite
// file, PostgresStore over a PostgreSQL database several daemons share
// (Catalog.Follow keeps each daemon's memory in step). Catalog sits on top: it holds the in-memory view that readers use
// and applies every mutation to the Store first, changing memory only after
// the store's transaction has committed.
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Sentinel errors. Every error a Store or Catalog returns wraps one of these
// when it applies, so callers test with errors.Is.
var (
	// ErrNotFound: the named entity does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a create-only put named an entity that already exists.
	ErrConflict = errors.New("already exists")
	// ErrInvalid: the entity failed validation (empty name, bad kind, ...).
	ErrInvalid = errors.New("invalid")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("catalog store closed")
)

// PutMode says what a Put may do.
type PutMode int

const (
	// Upsert creates the entity or replaces it.
	Upsert PutMode = iota
	// Create only creates; an existing entity gives ErrConflict.
	Create
	// Replace only replaces; a missing entity gives ErrNotFound.
	Replace
)

// StreamKind tells streams from tables.
type StreamKind string

// Stream kinds.
const (
	KindStream StreamKind = "stream"
	KindTable  StreamKind = "table"
)

// Stream is a CREATE STREAM or CREATE TABLE statement kept by name.
type Stream struct {
	Name string
	Kind StreamKind
	// SQL is the statement as the user wrote it.
	SQL     string
	Created time.Time // set by the store on creation, kept on replace
	Updated time.Time // set by the store on every write
}

// RuleState is the state a rule should be in; the daemon converges to it.
type RuleState string

// Wanted rule states.
const (
	RuleRunning RuleState = "running"
	RuleStopped RuleState = "stopped"
)

// Rule is a rule definition with its wanted state.
type Rule struct {
	ID string
	// Definition is the rule's JSON as accepted by the REST API.
	Definition json.RawMessage
	State      RuleState
	// Version is the user's version string ("" when unset).
	Version string
	// Tags are kept in the given order; empty is nil.
	Tags    []string
	Created time.Time
	Updated time.Time
}

// Connection is a named, shared connection.
type Connection struct {
	ID   string
	Type string
	// Props are JSON-compatible properties. After a put they read back as
	// JSON decodes them into the value model: whole numbers as int64, other
	// numbers as float64, times and bytes as strings.
	Props   map[string]any
	Created time.Time
	Updated time.Time
}

// ConfCategory groups confKeys.
type ConfCategory string

// ConfKey categories.
const (
	ConfSource     ConfCategory = "source"
	ConfSink       ConfCategory = "sink"
	ConfConnection ConfCategory = "connection"
)

// ConfKey is a named property set of a source, sink or connection type,
// overlaying the etc/ YAML files.
type ConfKey struct {
	Category ConfCategory
	Type     string // connector type, e.g. "mqtt"
	Key      string // confKey name, e.g. "demo_conf"
	Props    map[string]any
	Created  time.Time
	Updated  time.Time
}

// Schema is a registered encoding schema (protobuf, custom).
type Schema struct {
	Type    string
	Name    string
	Content string
	File    string
	SoFile  string
	Version string
	Created time.Time
	Updated time.Time
}

// Upload records a file uploaded into data/uploads; the bytes live in the
// file, not in the catalog.
type Upload struct {
	Name    string
	Path    string
	Size    int64
	SHA256  string
	Created time.Time
	Updated time.Time
}

// Snapshot is the whole catalog read in one transaction.
type Snapshot struct {
	Streams     []Stream
	Rules       []Rule
	Connections []Connection
	ConfKeys    []ConfKey
	Schemas     []Schema
	Uploads     []Upload
}

// Store is the durable catalog. Every method takes a context covering only
// that call. Each mutation is one transaction; mutations are serialized.
// Puts return the entity as stored (timestamps set, properties normalized),
// which is what a later Get returns. Errors are wrapped with what was being
// done and wrap ErrNotFound, ErrConflict, ErrInvalid or ErrClosed where they
// apply. Implementations are safe for concurrent use.
type Store interface {
	PutStream(ctx context.Context, s Stream, mode PutMode) (Stream, error)
	GetStream(ctx context.Context, name string) (Stream, error)
	// ListStreams lists streams of kind, or all when kind is "", by name.
	ListStreams(ctx context.Context, kind StreamKind) ([]Stream, error)
	DeleteStream(ctx context.Context, name string) error

	PutRule(ctx context.Context, r Rule, mode PutMode) (Rule, error)
	GetRule(ctx context.Context, id string) (Rule, error)
	ListRules(ctx context.Context) ([]Rule, error)
	DeleteRule(ctx context.Context, id string) error
	// SetRuleState changes only the wanted state (and Updated).
	SetRuleState(ctx context.Context, id string, state RuleState) (Rule, error)

	PutConnection(ctx context.Context, c Connection, mode PutMode) (Connection, error)
	GetConnection(ctx context.Context, id string) (Connection, error)
	ListConnections(ctx context.Context) ([]Connection, error)
	DeleteConnection(ctx context.Context, id string) error

	PutConfKey(ctx context.Context, k ConfKey, mode PutMode) (ConfKey, error)
	GetConfKey(ctx context.Context, category ConfCategory, typ, key string) (ConfKey, error)
	// ListConfKeys lists the keys of one category and type; typ "" lists
	// every type of the category.
	ListConfKeys(ctx context.Context, category ConfCategory, typ string) ([]ConfKey, error)
	DeleteConfKey(ctx context.Context, category ConfCategory, typ, key string) error

	PutSchema(ctx context.Context, s Schema, mode PutMode) (Schema, error)
	GetSchema(ctx context.Context, typ, name string) (Schema, error)
	// ListSchemas lists schemas of typ, or all when typ is "".
	ListSchemas(ctx context.Context, typ string) ([]Schema, error)
	DeleteSchema(ctx context.Context, typ, name string) error

	PutUpload(ctx context.Context, u Upload, mode PutMode) (Upload, error)
	GetUpload(ctx context.Context, name string) (Upload, error)
	ListUploads(ctx context.Context) ([]Upload, error)
	DeleteUpload(ctx context.Context, name string) error

	// Load reads the whole catalog in one consistent read.
	Load(ctx context.Context) (*Snapshot, error)
	// Backup writes a consistent copy of the catalog to path, which must
	// not exist. The copy is complete and synced when Backup returns nil.
	Backup(ctx context.Context, path string) error
	// Close releases the store; later calls return ErrClosed.
	Close() error
}
