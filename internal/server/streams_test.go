package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCreateEitherKindOnEitherRoute: as in eKuiper, the statement decides
// what POST /streams and POST /tables create; PUT keeps to its route's
// kind.
func TestCreateEitherKindOnEitherRoute(t *testing.T) {
	s := newServer(t, "")
	s.run([]step{
		{"table on /streams", "POST", "/streams", ddl(`CREATE TABLE t1 () WITH (TYPE="memory", DATASOURCE="t1")`), 201, "Table t1 is created."},
		{"is a table", "GET", "/tables/t1", "", 200, "t1"},
		{"is no stream", "GET", "/streams/t1", "", 404, ""},
		{"stream on /tables", "POST", "/tables", ddl(`CREATE STREAM s1 () WITH (TYPE="memory", DATASOURCE="s1")`), 201, "Stream s1 is created."},
		{"is a stream", "GET", "/streams/s1", "", 200, "s1"},
		{"put keeps its kind", "PUT", "/streams/t1", ddl(`CREATE TABLE t1 () WITH (TYPE="memory", DATASOURCE="t2")`), 400, "CREATE STREAM"},
	})
}

// TestStreamDefaultSecretsMasked: the DEFAULT strings of secret columns,
// and secrets MaskText recognises in any DEFAULT, are masked when a stream
// or table is described or exported; the masked statement sent back keeps
// the stored secrets, and one that moves them is refused.
func TestStreamDefaultSecretsMasked(t *testing.T) {
	s := newServer(t, "")
	const stream = `CREATE STREAM sec (api_token STRING DEFAULT 'tok-1', creds STRUCT(user STRING DEFAULT 'bob', password STRING DEFAULT 'pw-2'), ` +
		`secret ARRAY(STRUCT(k STRING DEFAULT 'in-3')), url STRING DEFAULT 'mqtt://u:pw-4@h:1883', note STRING DEFAULT 'plain') WITH (TYPE="memory", DATASOURCE="t")`
	const table = `CREATE TABLE sect (token STRING DEFAULT 'tok-5') WITH (TYPE="memory", DATASOURCE="tt")`
	s.run([]step{
		{"create stream", "POST", "/streams", ddl(stream), 201, ""},
		{"create table", "POST", "/tables", ddl(table), 201, ""},
	})
	secrets := []string{"tok-1", "pw-2", "in-3", "pw-4", "tok-5"}
	for _, path := range []string{"/streams/sec", "/tables/sect", "/data/export"} {
		code, body := s.do("GET", path, "")
		if code != 200 {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		for _, secret := range secrets {
			if strings.Contains(body, secret) {
				t.Errorf("GET %s shows the secret %q: %s", path, secret, body)
			}
		}
		if !strings.Contains(body, "******") || (path != "/tables/sect" && (!strings.Contains(body, "bob") || !strings.Contains(body, "plain"))) {
			t.Errorf("GET %s: want masked secrets and the plain defaults kept: %s", path, body)
		}
	}
	var export struct{ Streams, Tables map[string]string }
	_, body := s.do("GET", "/data/export", "")
	if err := json.Unmarshal([]byte(body), &export); err != nil {
		t.Fatal(err)
	}
	masked := export.Streams["sec"]
	s.run([]step{
		{"masked statement sent back", "PUT", "/streams/sec", ddl(masked), 200, ""},
		{"masked statement with a moved secret", "PUT", "/streams/sec", ddl(strings.Replace(masked, "h:1883", "evil:1883", 1)), 422, "masked value"},
	})
	if st, err := s.cat.Stream("sec"); err != nil || st.SQL != stream {
		t.Fatalf("stored statement after the masked PUT: %q, %v; want the original", st.SQL, err)
	}
}
