package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/cluster"
	"github.com/rekuiper/rekuiper/internal/server"
)

// TestNodeIdentity: GET / and a rule's status name the node; GET
// /cluster/nodes lists this node alone when the catalog is not shared.
func TestNodeIdentity(t *testing.T) {
	s := newServerWith(t, "", func(o *server.Options) {
		o.Cluster = cluster.New(cluster.Config{ID: "node-7", Address: "127.0.0.1:9081", Version: "v9"})
	})
	code, body := s.do("GET", "/", "")
	var info map[string]any
	if err := json.Unmarshal([]byte(body), &info); code != 200 || err != nil || info["node"] != "node-7" {
		t.Errorf("GET / = %d %s", code, body)
	}
	code, body = s.do("GET", "/cluster/nodes", "")
	var nodes []cluster.Node
	if err := json.Unmarshal([]byte(body), &nodes); code != 200 || err != nil {
		t.Fatalf("GET /cluster/nodes = %d %s", code, body)
	}
	if len(nodes) != 1 || nodes[0].ID != "node-7" || !nodes[0].Self || !nodes[0].Healthy || nodes[0].Version != "v9" {
		t.Errorf("nodes %s", body)
	}
	if code, body := s.do("POST", "/streams", `{"sql":"CREATE STREAM demo () WITH (TYPE=\"memory\", DATASOURCE=\"t\")"}`); code != 201 {
		t.Fatalf("create stream %d %s", code, body)
	}
	if code, body := s.do("POST", "/rules", `{"id":"r1","sql":"SELECT * FROM demo","actions":[{"nop":{}}]}`); code != 201 {
		t.Fatalf("create rule %d %s", code, body)
	}
	for _, path := range []string{"/rules/r1/status", "/v2/rules/r1/status"} {
		code, body := s.do("GET", path, "")
		var st map[string]any
		if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil || st["node"] != "node-7" {
			t.Errorf("GET %s = %d %s", path, code, body)
		}
	}
}

// TestNoNodeWithoutID: a server without a node id shows none.
func TestNoNodeWithoutID(t *testing.T) {
	s := newServer(t, "")
	if _, body := s.do("GET", "/", ""); strings.Contains(body, `"node"`) {
		t.Errorf("GET / = %s", body)
	}
}
