package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

type scanTableRow struct {
	Emitter string         `json:"emitter"`
	Content map[string]any `json:"content"`
}

// scanTables reads GET /rules/{id}/scantables; ok is false unless it
// answered 200 with a JSON array.
func (e *engineServer) scanTables(id string) (rows []scanTableRow, ok bool) {
	code, body := e.do("GET", "/rules/"+id+"/scantables", "")
	if code != 200 {
		return nil, false
	}
	if err := json.Unmarshal([]byte(body), &rows); err != nil {
		e.t.Fatalf("scantables: %v in %s", err, body)
	}
	return rows, true
}

// TestRuleScanTables: GET /rules/{id}/scantables answers the rows a
// running rule's join holds for a file table, in eKuiper's shape; a rule
// that joins no scan table gets 400, a stopped rule 409, an unknown one
// 404.
func TestRuleScanTables(t *testing.T) {
	e := newEngineEtc(t, nil)
	devices := `[{"id":1,"name":"pump"},{"id":2,"name":"fan"}]`
	if err := os.WriteFile(filepath.Join(e.data, "devices.json"), []byte(devices), 0o644); err != nil {
		t.Fatal(err)
	}
	e.run([]step{
		{"stream", "POST", "/streams", ddl(`CREATE STREAM sensors (id BIGINT) WITH (TYPE="simulator", EXTRA="{\"interval\":50,\"data\":[{\"id\":1}]}")`), 201, ""},
		{"table", "POST", "/tables", ddl(`CREATE TABLE devices (id BIGINT, name STRING) WITH (TYPE="file", DATASOURCE="devices.json", FORMAT="json")`), 201, ""},
		{"join rule", "POST", "/rules", `{"id":"j","sql":"SELECT sensors.id, devices.name FROM sensors INNER JOIN devices ON sensors.id = devices.id","actions":[{"nop":{}}]}`, 201, ""},
		{"rule without join", "POST", "/rules", `{"id":"plain","sql":"SELECT * FROM sensors","actions":[{"nop":{}}]}`, 201, ""},
	})
	var rows []scanTableRow
	testwait.Until(t, "the table's rows", func() bool {
		var ok bool
		rows, ok = e.scanTables("j")
		return ok && len(rows) == 2
	})
	sort.Slice(rows, func(i, j int) bool { return rows[i].Content["id"].(float64) < rows[j].Content["id"].(float64) })
	for i, want := range []string{"pump", "fan"} {
		r := rows[i]
		if r.Emitter != "devices" || r.Content["id"] != float64(i+1) || r.Content["name"] != want || len(r.Content) != 2 {
			t.Fatalf("row %d = %+v, want devices {id:%d name:%s}", i, r, i+1, want)
		}
	}
	e.run([]step{
		{"no join", "GET", "/rules/plain/scantables", "", 400, "joins no scan table"},
		{"unknown rule", "GET", "/rules/nosuch/scantables", "", 404, ""},
		{"stop", "POST", "/rules/j/stop", "", 200, ""},
		{"stopped rule", "GET", "/rules/j/scantables", "", 409, "not running"},
	})
}

// TestRuleScanTablesWhileUpdating reads a memory scan table's rows while a
// feed rule keeps replacing them (RETAIN_SIZE 3): every answer has at most
// three rows of the table. Run with -race, it shows the reads do not race
// the join's goroutine.
func TestRuleScanTablesWhileUpdating(t *testing.T) {
	e := newEngineEtc(t, nil)
	e.run([]step{
		{"feed", "POST", "/streams", ddl(`CREATE STREAM feed () WITH (TYPE="simulator", EXTRA="{\"interval\":1,\"loop\":true,\"data\":[{\"id\":1},{\"id\":2},{\"id\":3},{\"id\":4},{\"id\":5}]}")`), 201, ""},
		{"events", "POST", "/streams", ddl(`CREATE STREAM events () WITH (TYPE="simulator", EXTRA="{\"interval\":5,\"loop\":true,\"data\":[{\"id\":1}]}")`), 201, ""},
		{"table", "POST", "/tables", ddl(`CREATE TABLE dims () WITH (TYPE="memory", DATASOURCE="dims", RETAIN_SIZE="3")`), 201, ""},
		{"join rule", "POST", "/rules", `{"id":"j","sql":"SELECT * FROM events INNER JOIN dims ON events.id = dims.id","actions":[{"nop":{}}]}`, 201, ""},
		{"feed rule", "POST", "/rules", `{"id":"f","sql":"SELECT * FROM feed","actions":[{"memory":{"topic":"dims"}}]}`, 201, ""},
	})
	seen := map[float64]bool{}
	testwait.Until(t, "every fed id in the table", func() bool {
		rows, ok := e.scanTables("j")
		if !ok {
			return false
		}
		if len(rows) > 3 {
			t.Fatalf("%d rows, want at most RETAIN_SIZE 3: %+v", len(rows), rows)
		}
		for _, r := range rows {
			if r.Emitter != "dims" {
				t.Fatalf("row of %q, want dims", r.Emitter)
			}
			id, _ := r.Content["id"].(float64)
			seen[id] = true
		}
		return len(seen) == 5
	})
}
