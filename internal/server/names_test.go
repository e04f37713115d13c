package server_test

import (
	"context"
	"testing"

	"github.com/rekuiper/rekuiper/internal/catalog"
)

// A name in the path that the name validator refuses answers 400 naming
// the problem on every route, whatever the route would have answered for a
// name that is merely unknown (404) or a write it does not offer (501).
func TestInvalidNameInPath(t *testing.T) {
	s := newEngineServer(t)
	const bad = "invalid%20name"
	var steps []step
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/streams/" + bad, ""},
		{"DELETE", "/streams/" + bad, ""},
		{"PUT", "/streams/" + bad, `{"sql":"CREATE STREAM alert () WITH (DATASOURCE=\"t\", TYPE=\"memory\")"}`},
		{"GET", "/streams/" + bad + "/schema", ""},
		{"GET", "/tables/" + bad, ""},
		{"DELETE", "/tables/" + bad, ""},
		{"PUT", "/tables/" + bad, `{"sql":"CREATE TABLE alertTable () WITH (DATASOURCE=\"t\", TYPE=\"memory\", KEY=\"id\", KIND=\"lookup\")"}`},
		{"GET", "/rules/" + bad, ""},
		{"DELETE", "/rules/" + bad, ""},
		{"PUT", "/rules/" + bad, `{}`},
		{"POST", "/rules/" + bad + "/start", ""},
		{"GET", "/rules/" + bad + "/status", ""},
		{"GET", "/services/" + bad, ""},
		{"DELETE", "/services/" + bad, ""},
		{"PUT", "/services/" + bad, `{}`},
		{"GET", "/plugins/sources/" + bad, ""},
		{"DELETE", "/plugins/sinks/" + bad, ""},
		{"DELETE", "/plugins/functions/" + bad, ""},
		{"GET", "/connections/" + bad, ""},
		{"DELETE", "/metadata/sources/mqtt/confKeys/" + bad, ""},
		{"GET", "/udf/javascript/invalid.id", ""},
		{"DELETE", "/udf/javascript/invalid.id", ""},
		{"PUT", "/udf/javascript/invalid.id", `{}`},
	} {
		steps = append(steps, step{c.method + " " + c.path, c.method, c.path, c.body, 400, "contains invalid characters"})
	}
	steps = append(steps,
		step{"the problem is named", "GET", "/rules/" + bad, "", 400, `rule id \"invalid name\" contains invalid characters: ' ' is not allowed`},
		step{"a valid unknown name is not found", "GET", "/rules/nosuch", "", 404, ""},
		step{"a rule id in a body", "POST", "/rules", `{"id":"a b","sql":"SELECT * FROM x","actions":[{"log":{}}]}`, 400, "contains invalid characters"},
	)
	s.run(steps)

	// A stream stored under such a name by an older version (or behind the
	// API) can still be read and deleted.
	ctx := context.Background()
	if _, err := s.cat.PutStream(ctx, catalog.Stream{Name: "old name", Kind: catalog.KindStream,
		SQL: "CREATE STREAM `old name` () WITH (DATASOURCE=\"t\", TYPE=\"memory\")"}, catalog.Create); err != nil {
		t.Fatal(err)
	}
	s.run([]step{
		{"legacy row readable", "GET", "/streams/old%20name", "", 200, "old name"},
		{"legacy row deletable", "DELETE", "/streams/old%20name", "", 200, ""},
		{"then gone", "GET", "/streams/old%20name", "", 400, "contains invalid characters"},
	})
}
