package catalog

// postgresMigrations are the statements of each migration in PostgreSQL,
// index for index with sqliteMigrations: the same tables and columns, with
// BIGINT for millisecond times and a cast for the JSON checks.
func postgresMigrations() [][]string {
	return [][]string{
		{
			`CREATE TABLE streams (
				name       TEXT PRIMARY KEY,
				kind       TEXT NOT NULL CHECK (kind IN ('stream', 'table')),
				sql        TEXT NOT NULL,
				created_at BIGINT NOT NULL,
				updated_at BIGINT NOT NULL
			)`,
			`CREATE TABLE rules (
				id         TEXT PRIMARY KEY,
				definition TEXT NOT NULL CHECK (definition::json IS NOT NULL),
				state      TEXT NOT NULL CHECK (state IN ('running', 'stopped')),
				version    TEXT NOT NULL DEFAULT '',
				tags       TEXT NOT NULL DEFAULT '[]' CHECK (tags::json IS NOT NULL),
				created_at BIGINT NOT NULL,
				updated_at BIGINT NOT NULL
			)`,
			`CREATE TABLE connections (
				id         TEXT PRIMARY KEY,
				type       TEXT NOT NULL,
				props      TEXT NOT NULL CHECK (props::json IS NOT NULL),
				created_at BIGINT NOT NULL,
				updated_at BIGINT NOT NULL
			)`,
			`CREATE TABLE conf_keys (
				category   TEXT NOT NULL CHECK (category IN ('source', 'sink', 'connection')),
				type       TEXT NOT NULL,
				key        TEXT NOT NULL,
				props      TEXT NOT NULL CHECK (props::json IS NOT NULL),
				created_at BIGINT NOT NULL,
				updated_at BIGINT NOT NULL,
				PRIMARY KEY (category, type, key)
			)`,
			`CREATE TABLE schemas (
				type       TEXT NOT NULL,
				name       TEXT NOT NULL,
				content    TEXT NOT NULL,
				file       TEXT NOT NULL,
				so_file    TEXT NOT NULL,
				version    TEXT NOT NULL,
				created_at BIGINT NOT NULL,
				updated_at BIGINT NOT NULL,
				PRIMARY KEY (type, name)
			)`,
			`CREATE TABLE uploads (
				name       TEXT PRIMARY KEY,
				path       TEXT NOT NULL,
				size       BIGINT NOT NULL,
				sha256     TEXT NOT NULL,
				created_at BIGINT NOT NULL,
				updated_at BIGINT NOT NULL
			)`,
		},
		{
			`CREATE TABLE rule_starts (
				id         TEXT PRIMARY KEY,
				started_at BIGINT NOT NULL
			)`,
		},
		{
			`CREATE TABLE js_functions (
				id          TEXT PRIMARY KEY,
				description TEXT NOT NULL,
				script      TEXT NOT NULL,
				is_agg      BIGINT NOT NULL,
				created_at  BIGINT NOT NULL,
				updated_at  BIGINT NOT NULL
			)`,
		},
		{
			`CREATE TABLE catalog_version (
				id      INTEGER PRIMARY KEY CHECK (id = 1),
				version BIGINT NOT NULL
			)`,
			`INSERT INTO catalog_version (id, version) VALUES (1, 0)`,
		},
		{
			`CREATE TABLE nodes (
				id         TEXT PRIMARY KEY,
				address    TEXT NOT NULL,
				version    TEXT NOT NULL,
				started_at BIGINT NOT NULL,
				last_seen  BIGINT NOT NULL
			)`,
		},
	}
}
