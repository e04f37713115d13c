package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/server/servertest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

func jsBody(t *testing.T, id, script string, isAgg bool) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"id": id, "description": "test " + id, "script": script, "isAgg": isAgg})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestJavaScriptFunctionRoutes(t *testing.T) {
	s := newServer(t, "")
	s.run([]step{
		{"empty list", "GET", "/udf/javascript", "", 200, "[]"},
		{"create", "POST", "/udf/javascript", jsBody(t, "double", "function double(x) { return x * 2 }", false), 201, "javascript function double is created"},
		{"create again", "POST", "/udf/javascript", jsBody(t, "double", "function double(x) { return x * 2 }", false), 409, "already exists"},
		{"case twin", "POST", "/udf/javascript", jsBody(t, "Double", "function Double(x) { return x * 2 }", false), 409, "ignore case"},
		{"syntax error", "POST", "/udf/javascript", jsBody(t, "bad", "function bad( {", false), 400, "compile script"},
		{"no such function", "POST", "/udf/javascript", jsBody(t, "missing", "function other() {}", false), 400, "defines no function named missing"},
		{"built-in name", "POST", "/udf/javascript", jsBody(t, "upper", "function upper(x) { return x }", false), 400, "built-in function"},
		{"top-level loop", "POST", "/udf/javascript", jsBody(t, "spin", "while (true) {} function spin() {}", false), 400, "time limit exceeded"},
		{"unknown field", "POST", "/udf/javascript", `{"id":"x","script":"function x(){}","bogus":1}`, 400, "bogus"},
		{"list", "GET", "/udf/javascript", "", 200, `["double"]`},
		{"in function metadata", "GET", "/metadata/functions", "", 200, `{"about":{"trial":false,"installed":true,"description":{"en":"JavaScript functions (/udf/javascript)","zh":"JavaScript functions (/udf/javascript)"}},"functions":[{"aggregate":false,"aliases":[],"description":"test double","maxArgs":-1,"minArgs":0,"name":"double","type":"scalar"}],"name":"javascript"}`},
		{"describe", "GET", "/udf/javascript/double", "", 200, `"script":"function double(x) { return x * 2 }"`},
		{"describe unknown", "GET", "/udf/javascript/nope", "", 404, "nope"},
		{"update", "PUT", "/udf/javascript/double", jsBody(t, "double", "function double(x) { return x + x }", true), 200, "javascript function double is updated"},
		{"described updated", "GET", "/udf/javascript/double", "", 200, `"isAgg":true`},
		{"update bad script", "PUT", "/udf/javascript/double", jsBody(t, "double", "function double(", false), 400, "compile script"},
		{"update id mismatch", "PUT", "/udf/javascript/double", jsBody(t, "triple", "function triple(x) { return x }", false), 400, "differs"},
		{"script kept", "GET", "/udf/javascript/double", "", 200, "x + x"},
		{"delete", "DELETE", "/udf/javascript/double", "", 200, "javascript function double is deleted"},
		{"delete again", "DELETE", "/udf/javascript/double", "", 404, "double"},
		{"list after delete", "GET", "/udf/javascript", "", 200, "[]"},
		{"gone from function metadata", "GET", "/metadata/functions", "", 200, `"functions":[],"name":"javascript"}`},
	})
}

// TestJavaScriptFunctionInRules runs rules calling JavaScript functions over
// the daemon's engine: a scalar, one that loops forever on some rows (a row
// error each time, the rule keeps running), one that throws, and an
// aggregate over a count window.
func TestJavaScriptFunctionInRules(t *testing.T) {
	dir := t.TempDir()
	s, stop := startEngine(t, dir)
	t.Cleanup(stop)
	s.run([]step{
		{"events confKey", "PUT", "/metadata/sources/simulator/confKeys/events", `{"data":[{"a":1},{"a":2},{"a":3}],"interval":"5ms","loop":true}`, 200, ""},
		{"events", "POST", "/streams", ddl(`CREATE STREAM events () WITH (TYPE="simulator", CONF_KEY="events")`), 201, ""},
		// Row 2 of slow times out (100 ms) each round; slow's interval
		// keeps the rule from falling behind.
		{"slow confKey", "PUT", "/metadata/sources/simulator/confKeys/slow", `{"data":[{"a":1},{"a":2},{"a":3}],"interval":"150ms","loop":true}`, 200, ""},
		{"slow", "POST", "/streams", ddl(`CREATE STREAM slow () WITH (TYPE="simulator", CONF_KEY="slow")`), 201, ""},
		{"label", "POST", "/udf/javascript", jsBody(t, "label", `var seen = 0; function label(a, s) { seen++; return {tag: s + a, half: a / 2, seen: seen > 0} }`, false), 201, ""},
		{"spinOnTwo", "POST", "/udf/javascript", jsBody(t, "spinOnTwo", `function spinOnTwo(a) { while (a === 2) {} return a * 10 }`, false), 201, ""},
		{"throwOnThree", "POST", "/udf/javascript", jsBody(t, "throwOnThree", `function throwOnThree(a) { if (a === 3) throw new Error("three is not allowed"); return a }`, false), 201, ""},
		{"spread", "POST", "/udf/javascript", jsBody(t, "spread", `function spread(xs) { return Math.max.apply(null, xs) - Math.min.apply(null, xs) }`, true), 201, ""},
		{"scalar rule", "POST", "/rules", `{"id":"scalar","sql":"SELECT a, label(a, \"a=\") AS l FROM events","actions":[{"file":{"path":"scalar.txt"}}]}`, 201, ""},
		{"spin rule", "POST", "/rules", `{"id":"spin","sql":"SELECT a, spinOnTwo(a) AS s FROM slow","actions":[{"file":{"path":"spin.txt"}}]}`, 201, ""},
		{"throw rule", "POST", "/rules", `{"id":"throw","sql":"SELECT a, throwOnThree(a) AS t FROM events","actions":[{"file":{"path":"throw.txt"}}]}`, 201, ""},
		{"agg rule", "POST", "/rules", `{"id":"agg","sql":"SELECT spread(a) AS sp, count(*) AS n FROM events GROUP BY COUNTWINDOW(3)","actions":[{"file":{"path":"agg.txt"}}]}`, 201, ""},
	})
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(s.data, name))
		return string(b)
	}
	testwait.Until(t, "scalar results", func() bool {
		out := read("scalar.txt")
		return strings.Contains(out, `{"a":1,"l":{"half":0.5,"seen":true,"tag":"a=1"}}`) &&
			strings.Contains(out, `{"a":2,"l":{"half":1,"seen":true,"tag":"a=2"}}`)
	})
	// Rows 1 and 3 keep coming after row 2 timed out more than once.
	testwait.Until(t, "spin rule outlives its time-outs", func() bool {
		return strings.Count(read("spin.txt"), `"s":30`) >= 3
	})
	if out := read("spin.txt"); strings.Contains(out, `"a":2,"s"`) {
		t.Fatalf("a row whose call timed out got a value: %s", out)
	}
	testwait.Until(t, "throw rule keeps running", func() bool {
		return strings.Count(read("throw.txt"), `"t":2`) >= 3
	})
	if out := read("throw.txt"); strings.Contains(out, `"a":3,"t"`) {
		t.Fatalf("a row whose call threw got a value: %s", out)
	}
	for _, id := range []string{"spin", "throw"} {
		_, body := s.do("GET", "/rules/"+id+"/status", "")
		if !strings.Contains(body, `"status": "running"`) && !strings.Contains(body, `"status":"running"`) {
			t.Fatalf("rule %s: %s", id, body)
		}
	}
	testwait.Until(t, "aggregate over count windows", func() bool {
		return strings.Count(read("agg.txt"), `{"n":3,"sp":2}`) >= 2
	})
	s.run([]step{
		{"delete used", "DELETE", "/udf/javascript/spread", "", 409, "used by rules agg"},
		{"isAgg change refused while used", "PUT", "/udf/javascript/spread", jsBody(t, "spread", "function spread(x) { return x }", false), 409, "isAgg cannot change while rules agg call it"},
		{"script change allowed while used", "PUT", "/udf/javascript/spread", jsBody(t, "spread", "function spread(xs) { return xs.length }", true), 200, ""},
		{"delete rule", "DELETE", "/rules/agg", "", 200, ""},
		{"delete unused", "DELETE", "/udf/javascript/spread", "", 200, ""},
	})
}

func TestJavaScriptFunctionExportImport(t *testing.T) {
	s := newServer(t, "")
	s.run([]step{
		{"create", "POST", "/udf/javascript", jsBody(t, "inc", "function inc(x) { return x + 1 }", false), 201, ""},
	})
	code, body := s.do("GET", "/data/export", "")
	if code != 200 {
		t.Fatalf("export: %d %s", code, body)
	}
	var doc struct {
		Scripts map[string]string `json:"scripts"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	var inc map[string]any
	if err := json.Unmarshal([]byte(doc.Scripts["inc"]), &inc); err != nil {
		t.Fatalf("scripts.inc %q: %v", doc.Scripts["inc"], err)
	}
	if inc["id"] != "inc" || inc["script"] != "function inc(x) { return x + 1 }" || inc["isAgg"] != false {
		t.Fatalf("exported %v", inc)
	}
	importDoc := func(scripts map[string]string) string {
		doc, err := json.Marshal(map[string]any{"scripts": scripts})
		if err != nil {
			t.Fatal(err)
		}
		content, err := json.Marshal(map[string]string{"content": string(doc)})
		if err != nil {
			t.Fatal(err)
		}
		return string(content)
	}
	s.run([]step{
		{"import with a bad script", "POST", "/data/import", importDoc(map[string]string{
			"dec": jsBody(t, "dec", "function dec(x) { return x - 1 }", true),
			"bad": jsBody(t, "bad", "function bad(", false),
		}), 400, `\"bad\":\"javascript function bad`},
		{"nothing changed", "GET", "/udf/javascript", "", 200, `["inc"]`},
		{"import", "POST", "/data/import", importDoc(map[string]string{
			"dec": jsBody(t, "dec", "function dec(x) { return x - 1 }", true),
		}), 200, ""},
		{"full import removed inc", "GET", "/udf/javascript/inc", "", 404, ""},
		{"dec imported", "GET", "/udf/javascript/dec", "", 200, `"isAgg":true`},
		{"list", "GET", "/udf/javascript", "", 200, `["dec"]`},
		{"partial import keeps dec", "POST", "/data/import?partial=1", importDoc(map[string]string{
			"inc": jsBody(t, "inc", "function inc(x) { return x + 1 }", false),
		}), 200, ""},
		{"list after partial", "GET", "/udf/javascript", "", 200, `["dec","inc"]`},
	})
}

// startEngine serves the REST API over the daemon's engine and a catalog in
// dir, loading the rules stored there; stop shuts it down.
func startEngine(t *testing.T, dir string) (*testServer, func()) {
	t.Helper()
	d := servertest.Start(t, servertest.Options{Dir: dir})
	return &testServer{t: t, url: d.URL, data: d.Data, cat: d.Catalog, mgr: d.Rules}, d.Close
}

// TestJavaScriptFunctionAfterRestart: a function and the rule calling it
// are stored; after a restart the rule runs again with the function.
func TestJavaScriptFunctionAfterRestart(t *testing.T) {
	dir := t.TempDir()
	s, stop := startEngine(t, dir)
	s.run([]step{
		{"confKey", "PUT", "/metadata/sources/simulator/confKeys/nums", `{"data":[{"a":5}],"interval":"10ms","loop":true}`, 200, ""},
		{"stream", "POST", "/streams", ddl(`CREATE STREAM nums () WITH (TYPE="simulator", CONF_KEY="nums")`), 201, ""},
		{"function", "POST", "/udf/javascript", jsBody(t, "triple", "function triple(x) { return x * 3 }", false), 201, ""},
		{"rule", "POST", "/rules", `{"id":"r","sql":"SELECT triple(a) AS t FROM nums","actions":[{"file":{"path":"out.txt"}}]}`, 201, ""},
	})
	out := filepath.Join(s.data, "out.txt")
	testwait.Until(t, "output before the restart", func() bool {
		b, _ := os.ReadFile(out)
		return strings.Contains(string(b), `{"t":15}`)
	})
	stop()
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	s, stop = startEngine(t, dir)
	t.Cleanup(stop)
	testwait.Until(t, "output after the restart", func() bool {
		b, _ := os.ReadFile(out)
		return strings.Contains(string(b), `{"t":15}`)
	})
	s.run([]step{{"still listed", "GET", "/udf/javascript", "", 200, `["triple"]`}})
}
