package server_test

import "testing"

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
