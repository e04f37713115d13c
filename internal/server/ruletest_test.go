package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rekuiper/rekuiper/internal/testwait"
)

// events connects to a rule test's event stream and returns its data
// lines as they come; cancel leaves the stream.
func events(t *testing.T, url string) (lines <-chan string, cancel func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("event stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan string, 64)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				out <- d
			}
		}
	}()
	return out, cancel
}

func next(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("event stream ended")
		}
		return l
	case <-time.After(20 * time.Second): // a liveness bound, not a speed assertion
		t.Fatal("no event")
	}
	return ""
}

func TestRuleTest(t *testing.T) {
	s := newServer(t, "")
	s.must("POST", "/streams", `{"sql":"CREATE STREAM demo (id string, n bigint, data ARRAY(STRUCT(k bigint))) WITH (DATASOURCE=\"t\", TYPE=\"mqtt\")"}`, 201)
	s.must("POST", "/tables", `{"sql":"CREATE TABLE names (n bigint, name string) WITH (DATASOURCE=\"n\", TYPE=\"memory\")"}`, 201)
	s.run([]step{
		{"unknown stream", "POST", "/ruletest", `{"id":"t1","sql":"SELECT * FROM nope","mockSource":{"nope":{"data":[{"a":1}]}}}`, 400, "stream or table nope is not found"},
		{"no mock", "POST", "/ruletest", `{"id":"t1","sql":"SELECT * FROM demo"}`, 400, "mockSource demo is required"},
		{"mock of another stream", "POST", "/ruletest", `{"id":"t1","sql":"SELECT * FROM demo","mockSource":{"demo":{"data":[{"n":1}]},"other":{"data":[{}]}}}`, 400, "reads no stream or table other"},
		{"bad record", "POST", "/ruletest", `{"id":"t1","sql":"SELECT * FROM demo","mockSource":{"demo":{"data":[{"n":1},"x"]}}}`, 400, "mockSource demo: record 1"},
		{"empty data", "POST", "/ruletest", `{"id":"t1","sql":"SELECT * FROM demo","mockSource":{"demo":{"data":[]}}}`, 400, "data is empty"},
		{"bad interval", "POST", "/ruletest", `{"id":"t1","sql":"SELECT * FROM demo","mockSource":{"demo":{"data":[{}],"interval":"soon"}}}`, 400, "interval"},
		{"bad sql", "POST", "/ruletest", `{"id":"t1","sql":"SELECT FROM","mockSource":{}}`, 400, "parse sql"},
		{"bad sink prop", "POST", "/ruletest", `{"id":"t1","sql":"SELECT * FROM demo","mockSource":{"demo":{"data":[{}]}},"sinkProps":{"sendSingle":"yes"}}`, 400, "sendSingle"},
		{"bad id", "POST", "/ruletest", `{"id":"a/b","sql":"SELECT * FROM demo","mockSource":{"demo":{"data":[{}]}}}`, 400, ""},
		{"unknown field", "POST", "/ruletest", `{"id":"t1","sql":"SELECT * FROM demo","nope":1}`, 400, "nope"},
		{"start unknown", "POST", "/ruletest/nope/start", "", 404, ""},
		{"events of unknown", "GET", "/test/nope", "", 404, ""},
		{"delete unknown", "DELETE", "/ruletest/nope", "", 404, ""},
	})

	// eKuiper's flow: create, listen, start, read, delete.
	code, body := s.do("POST", "/ruletest", `{"id":"t1","sql":"SELECT id, n, unnest(data) FROM demo WHERE n > 1",
		"mockSource":{"demo":{"data":[{"id":"a","n":1,"data":[{"k":1}]},{"id":"b","n":2,"data":[{"k":2},{"k":3}]}],"interval":10,"loop":true}},
		"sinkProps":{"sendSingle":true}}`)
	var created struct {
		ID   string `json:"id"`
		Port int    `json:"port"`
	}
	if err := json.Unmarshal([]byte(body), &created); code != 200 || err != nil || created.ID != "t1" || created.Port == 0 {
		t.Fatalf("create: %d %s", code, body)
	}
	if !strings.HasSuffix(s.url, ":"+itoa(created.Port)) {
		t.Fatalf("port %d is not the REST port of %s", created.Port, s.url)
	}
	lines, leave := events(t, s.url+"/test/t1")
	s.must("POST", "/ruletest/t1/start", "", 200)
	s.run([]step{{"start twice", "POST", "/ruletest/t1/start", "", 409, "started already"}})
	// The records loop: b's two rows, then b's again; a never passes.
	for i := 0; i < 4; i++ {
		want := []string{`{"id":"b","k":2,"n":2}`, `{"id":"b","k":3,"n":2}`}[i%2]
		if got := next(t, lines); got != want {
			t.Fatalf("event %d: %s, want %s", i, got, want)
		}
	}
	s.must("DELETE", "/ruletest/t1", "", 200)
	for range lines { // the stream ends with the run
	}
	leave()
	s.run([]step{{"deleted", "POST", "/ruletest/t1/start", "", 404, ""}})

	// A join with a table, no loop, without sendSingle: one array per
	// emission. The run ends when its only listener leaves.
	s.must("POST", "/ruletest", `{"id":"t2","sql":"SELECT demo.id, names.name FROM demo INNER JOIN names ON demo.n = names.n",
		"mockSource":{"demo":{"data":[{"id":"x","n":7},{"id":"y","n":8}],"interval":"5ms"},"names":{"data":[{"n":7,"name":"seven"}]}}}`, 200)
	lines, leave = events(t, s.url+"/test/t2")
	s.must("POST", "/ruletest/t2/start", "", 200)
	if got := next(t, lines); got != `[{"id":"x","name":"seven"}]` {
		t.Fatalf("join event %s", got)
	}
	leave()
	// start answers 409 while the run exists (started), 404 after.
	testwait.Until(t, "the run to end with its last listener", func() bool {
		code, _ := s.do("POST", "/ruletest/t2/start", "")
		return code == 404
	})
}
