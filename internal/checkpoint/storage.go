package checkpoint

// Storage keeps a rule's checkpoints. The engine picks one per daemon: the
// local Store (files in the data folder) on a node alone, Shared (the
// cluster's PostgreSQL catalog) when several nodes share the rules, so
// that the node that takes a rule over restores what the previous one
// saved. Keys are rule ids; each method is safe for concurrent use on
// different rules and called by one goroutine at a time for one rule.
type Storage interface {
	// Save writes cp durably and atomically and returns its size; a crash
	// leaves the previous checkpoints or the new one complete.
	Save(cp *Checkpoint) (int, error)
	// Latest returns the newest readable checkpoint of the rule: ErrNotFound
	// when none, ErrMismatch when it belongs to another definition.
	Latest(ruleID, fingerprint string) (*Checkpoint, error)
	// Load returns checkpoint id of the rule, checked like Latest.
	Load(ruleID, fingerprint string, id uint64) (*Checkpoint, error)
	// MarkCommitted records that checkpoint id's transactional sinks
	// committed; Committed returns the last id so marked.
	MarkCommitted(ruleID string, id uint64) error
	Committed(ruleID string) (uint64, bool)
	// Delete removes every checkpoint of the rule.
	Delete(ruleID string) error
}

var (
	_ Storage = (*Store)(nil)
	_ Storage = (*Shared)(nil)
)
