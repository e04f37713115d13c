package server_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

// TestMemoryLookupOverREST drives a memory lookup table through the REST
// API over the daemon's engine: a first rule publishes the table's rows to
// its topic (over and over) and is deleted; a second rule, started afterwards, joins a
// stream with the table and writes to a file. The joined rows can only
// come from rows published before the second rule started.
func TestMemoryLookupOverREST(t *testing.T) {
	dir := t.TempDir()
	s, stop := startEngine(t, dir)
	t.Cleanup(stop)
	s.run([]step{
		{"dims confKey", "PUT", "/metadata/sources/simulator/confKeys/dims", `{"data":[{"id":1,"name":"pump"},{"id":2,"name":"fan"}],"interval":"5ms","loop":true}`, 200, ""},
		{"events confKey", "PUT", "/metadata/sources/simulator/confKeys/events", `{"data":[{"k":1},{"k":2},{"k":3}],"interval":"5ms","loop":true}`, 200, ""},
		{"dim feed", "POST", "/streams", ddl(`CREATE STREAM dimfeed () WITH (TYPE="simulator", CONF_KEY="dims")`), 201, ""},
		{"events", "POST", "/streams", ddl(`CREATE STREAM events () WITH (TYPE="simulator", CONF_KEY="events")`), 201, ""},
		{"lookup table", "POST", "/tables", ddl(`CREATE TABLE devices () WITH (DATASOURCE="dim", TYPE="memory", KIND="lookup", KEY="id")`), 201, ""},
		{"feed rule", "POST", "/rules", `{"id":"feed","sql":"SELECT * FROM dimfeed","actions":[{"memory":{"topic":"dim"}}]}`, 201, ""},
	})
	testwait.Until(t, "the feed rule published both rows", func() bool {
		_, body := s.do("GET", "/rules/feed/status", "")
		m := sinkOut.FindStringSubmatch(body)
		if m == nil {
			return false
		}
		n, _ := strconv.Atoi(m[1])
		return n >= 2
	})
	s.run([]step{
		{"delete feed", "DELETE", "/rules/feed", "", 200, ""},
		{"join rule", "POST", "/rules", joinRule, 201, ""},
	})
	waitJoined(t, s.data)
}

// TestSimulatorLookupOverREST joins a stream with a simulator lookup table
// (eKuiper's TYPE="simulator", KIND="lookup"): the table's rows are the
// confKey's data, laid over etc/sources/simulator.yaml's default section.
func TestSimulatorLookupOverREST(t *testing.T) {
	dir := t.TempDir()
	s, stop := startEngine(t, dir)
	t.Cleanup(stop)
	s.run([]step{
		{"dims confKey", "PUT", "/metadata/sources/simulator/confKeys/dims", `{"data":[{"id":1,"name":"pump"},{"id":2,"name":"fan"}]}`, 200, ""},
		{"events confKey", "PUT", "/metadata/sources/simulator/confKeys/events", `{"data":[{"k":1},{"k":2},{"k":3}],"interval":"5ms","loop":true}`, 200, ""},
		{"bad confKey", "PUT", "/metadata/sources/simulator/confKeys/bad", `{"data":[1]}`, 200, ""},
		{"events", "POST", "/streams", ddl(`CREATE STREAM events () WITH (TYPE="simulator", CONF_KEY="events")`), 201, ""},
		{"lookup table", "POST", "/tables", ddl(`CREATE TABLE devices () WITH (TYPE="simulator", CONF_KEY="dims", KIND="lookup")`), 201, ""},
		{"rows that are not objects", "POST", "/tables", ddl(`CREATE TABLE bad () WITH (TYPE="simulator", CONF_KEY="bad", KIND="lookup")`), 400, "not an object"},
		{"join rule", "POST", "/rules", joinRule, 201, ""},
	})
	waitJoined(t, s.data)
}

// joinRule joins the events stream (k = 1, 2, 3) with the devices table
// (id 1 pump, id 2 fan) into joined.txt.
const joinRule = `{"id":"join","sql":"SELECT events.k, devices.name FROM events INNER JOIN devices ON events.k = devices.id","actions":[{"file":{"path":"joined.txt"}}]}`

// waitJoined waits for joinRule's rows of both devices, and checks the
// inner join emitted no row without a match.
func waitJoined(t *testing.T, dir string) {
	t.Helper()
	out := filepath.Join(dir, "joined.txt")
	var text string
	testwait.Until(t, "joined rows for both devices", func() bool {
		b, _ := os.ReadFile(out)
		text = string(b)
		return strings.Contains(text, `{"k":1,"name":"pump"}`) && strings.Contains(text, `{"k":2,"name":"fan"}`)
	})
	if strings.Contains(text, `"k":3`) {
		t.Fatalf("inner join emitted a row without a table match: %s", text)
	}
}

var sinkOut = regexp.MustCompile(`"sink_memory_0_0_records_out_total": (\d+)`)
