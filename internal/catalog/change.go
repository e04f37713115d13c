package catalog

// ChangeKind names the kind of entity a Change is about.
type ChangeKind string

// Change kinds.
const (
	ChangeStream     ChangeKind = "stream"
	ChangeRule       ChangeKind = "rule"
	ChangeConnection ChangeKind = "connection"
	ChangeConfKey    ChangeKind = "confKey"
	ChangeSchema     ChangeKind = "schema"
	ChangeUpload     ChangeKind = "upload"
	ChangeJSFunction ChangeKind = "jsFunction"
)

// Change names one committed write of the catalog: the kind and key of the
// entity written (created, replaced or deleted) and the catalog version the
// write produced. The key is the entity's identity: [name] or [id] for
// most kinds, [category, type, key] for confKeys, [type, name] for schemas.
// A Change with an empty Kind says only that something may have changed:
// the receiver reloads the whole catalog.
type Change struct {
	Kind    ChangeKind `json:"kind,omitempty"`
	Key     []string   `json:"key,omitempty"`
	Version int64      `json:"version"`
	// Deleted is set by the Catalog when it applied the change and found
	// the entity gone; stores leave it false.
	Deleted bool `json:"-"`
	// Origin identifies the store instance that made the write, so an
	// instance can tell its own writes from other nodes'.
	Origin string `json:"origin,omitempty"`
}

func ch(kind ChangeKind, key ...string) Change { return Change{Kind: kind, Key: key} }
