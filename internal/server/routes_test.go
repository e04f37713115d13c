package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/server/servertest"
)

func TestBatch(t *testing.T) {
	s := newServer(t, "")
	code, body := s.do("POST", "/batch/req", `[
		{"method":"POST","path":"/streams","body":"{\"sql\":\"CREATE STREAM b1 () WITH (TYPE=\\\"memory\\\")\"}"},
		{"method":"get","path":"/streams"},
		{"method":"GET","path":"/streams/nope"},
		{"method":"POST","path":"/batch/req","body":"[]"},
		{"method":"GET","path":"streams"}
	]`)
	if code != 200 {
		t.Fatalf("batch: %d %s", code, body)
	}
	var out []struct {
		Code     int    `json:"code"`
		Response string `json:"response"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || len(out) != 5 {
		t.Fatalf("batch answer %s: %v", body, err)
	}
	if out[0].Code != 201 || out[0].Response != "Stream b1 is created." {
		t.Errorf("create: %+v", out[0])
	}
	if out[1].Code != 200 || out[1].Response != `["b1"]` {
		t.Errorf("list: %+v", out[1])
	}
	if out[2].Code != 404 || !strings.Contains(out[2].Response, "not found") {
		t.Errorf("unknown: %+v", out[2])
	}
	if out[3].Code != 0 || out[3].Error == "" {
		t.Errorf("nested batch ran: %+v", out[3])
	}
	if out[4].Code != 0 || !strings.Contains(out[4].Error, "must start with /") {
		t.Errorf("relative path: %+v", out[4])
	}
	s.run([]step{
		{"not a list", "POST", "/batch/req", `{"method":"GET"}`, 400, "decode body"},
	})
}

func TestUnsupportedExtensions(t *testing.T) {
	s := newServer(t, "")
	s.run([]step{
		{"plugins list", "GET", "/plugins/sources", "", 200, "[]"},
		{"portables list", "GET", "/plugins/portables", "", 200, "[]"},
		{"udfs list", "GET", "/plugins/udfs", "", 200, "[]"},
		{"prebuild", "GET", "/plugins/sinks/prebuild", "", 200, "{}"},
		{"plugin install", "POST", "/plugins/sources", `{"name":"x","file":"http://h/x.zip"}`, 501, "public Go SDK"},
		{"plugin delete", "DELETE", "/plugins/portables/x", "", 501, "public Go SDK"},
		{"plugin describe", "GET", "/plugins/functions/x", "", 404, ""},
		{"services list", "GET", "/services", "", 200, "[]"},
		{"service functions", "GET", "/services/functions", "", 200, "[]"},
		{"service create", "POST", "/services", `{"name":"s","file":"x"}`, 501, "rest sink"},
		{"schemas list", "GET", "/schemas/protobuf", "", 200, "[]"},
		{"schema upload form", "PUT", "/schemas/protobuf/s/upload", "", 501, "multipart form is not supported"},
		{"js list", "GET", "/udf/javascript", "", 200, "[]"},
	})
}

func TestUploads(t *testing.T) {
	etc := t.TempDir()
	s := newServer(t, etc)
	src := filepath.Join(s.data, "src.txt") // inside the allowed folders
	if err := os.WriteFile(src, []byte("from a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("not for you"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, path := s.do("POST", "/config/uploads", `{"name":"a.txt","content":"hello"}`)
	if code != 201 || !filepath.IsAbs(path) || filepath.Base(path) != "a.txt" || filepath.Base(filepath.Dir(path)) != "uploads" {
		t.Fatalf("upload: %d %s", code, path)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello" {
		t.Fatalf("uploaded file: %q %v", b, err)
	}
	code, path2 := s.do("POST", "/config/uploads", `{"name":"b.txt","file":"file://`+src+`"}`)
	if b, err := os.ReadFile(path2); code != 201 || err != nil || string(b) != "from a file" {
		t.Fatalf("upload by url: %d %s %q %v", code, path2, b, err)
	}
	// multipart: eKuiper's upload form, field uploadFile.
	code, path3 := postForm(t, s.url, formFile{"uploadFile", "c.csv", "x,y\n1,2\n"})
	if b, err := os.ReadFile(path3); code != 201 || err != nil || string(b) != "x,y\n1,2\n" || filepath.Dir(path3) != filepath.Dir(path) {
		t.Fatalf("multipart upload: %d %s %q %v", code, path3, b, err)
	}
	for _, tt := range []struct {
		name     string
		parts    []formFile
		contains string
	}{
		{"wrong field", []formFile{{"file", "d.csv", "x"}}, `unknown field \"file\"`},
		{"no file name", []formFile{{"uploadFile", "", "x"}}, "no file name"},
		{"two files", []formFile{{"uploadFile", "d.csv", "x"}, {"uploadFile", "e.csv", "y"}}, "more than one"},
		{"file then other field", []formFile{{"uploadFile", "d.csv", "x"}, {"extra", "", "y"}}, `unknown field \"extra\"`},
		{"no parts", nil, "no \\\"uploadFile\\\" field"},
		{"hidden name", []formFile{{"uploadFile", ".env", "x"}}, "must not start with a dot"},
		{"traversal name", []formFile{{"uploadFile", "..", "x"}}, "dot"},
	} {
		t.Run("multipart "+tt.name, func(t *testing.T) {
			code, body := postForm(t, s.url, tt.parts...)
			if code != 400 || !strings.Contains(body, tt.contains) {
				t.Fatalf("got %d %s, want 400 containing %s", code, body, tt.contains)
			}
		})
	}
	// A refused form stores nothing, not even its first, valid file.
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "d.csv")); !os.IsNotExist(err) {
		t.Fatalf("a refused form left d.csv: %v", err)
	}
	// Multipart is taken by this route only.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("sql", "CREATE STREAM x () WITH (TYPE=\"memory\")")
	mw.Close()
	resp, err := http.Post(s.url+"/streams", mw.FormDataContentType(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("multipart stream: %d, want 415", resp.StatusCode)
	}
	want, _ := json.Marshal([]string{path, path2, path3})
	s.run([]step{
		{"list", "GET", "/config/uploads", "", 200, string(want)},
		{"parent folder", "POST", "/config/uploads", `{"name":"../x","content":"x"}`, 400, "must not start with a dot"},
		{"parent folder inside", "POST", "/config/uploads", `{"name":"a/../../x","content":"x"}`, 400, "must not start with a dot"},
		{"leading slash", "POST", "/config/uploads", `{"name":"/etc/x","content":"x"}`, 400, "empty path element"},
		{"doubled slash", "POST", "/config/uploads", `{"name":"a//x","content":"x"}`, 400, "empty path element"},
		{"trailing slash", "POST", "/config/uploads", `{"name":"a/","content":"x"}`, 400, "empty path element"},
		{"dot dot", "POST", "/config/uploads", `{"name":"..","content":"x"}`, 400, "dot"},
		{"hidden", "POST", "/config/uploads", `{"name":".env","content":"x"}`, 400, "dot"},
		{"backslash", "POST", "/config/uploads", `{"name":"a\\b","content":"x"}`, 400, "backslash"},
		{"no name", "POST", "/config/uploads", `{"content":"x"}`, 400, "name is required"},
		{"both", "POST", "/config/uploads", `{"name":"z","content":"x","file":"file:///etc/hostname"}`, 400, "not both"},
		{"bad scheme", "POST", "/config/uploads", `{"name":"z","file":"ftp://h/x"}`, 400, "want file://"},
		{"outside file", "POST", "/config/uploads", `{"name":"z","file":"file://` + outside + `"}`, 422, "outside the allowed folders"},
		{"missing outside file", "POST", "/config/uploads", `{"name":"z","file":"file:///nonexistent/x"}`, 422, "outside the allowed folders"},
		{"loopback url", "POST", "/config/uploads", `{"name":"z","file":"` + s.url + `/ping"}`, 422, "enablePrivateNet"},
		{"delete", "DELETE", "/config/uploads/a.txt", "", 200, "ok"},
		{"delete again", "DELETE", "/config/uploads/a.txt", "", 404, ""},
		{"delete dot segment", "DELETE", "/config/uploads/..", "", 400, "segments are not allowed"},
		{"delete bad name", "DELETE", "/config/uploads/.env", "", 400, "must not start with a dot"},
	})
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("deleted upload still on disk: %v", err)
	}

	// Names with folders, as in eKuiper: the folders are made on upload
	// and removed with their last file.
	code, nested := s.do("POST", "/config/uploads", `{"name":"l1/l2/n.txt","content":"deep"}`)
	if b, err := os.ReadFile(nested); code != 201 || err != nil || string(b) != "deep" ||
		nested != filepath.Join(filepath.Dir(path), "l1", "l2", "n.txt") {
		t.Fatalf("nested upload: %d %s %q %v", code, nested, b, err)
	}
	code, beside := s.do("POST", "/config/uploads", `{"name":"l1/m.txt","content":"near"}`)
	if code != 201 {
		t.Fatalf("second nested upload: %d %s", code, beside)
	}
	s.run([]step{
		{"list nested", "GET", "/config/uploads", "", 200, "n.txt"},
		{"delete nested", "DELETE", "/config/uploads/l1/l2/n.txt", "", 200, "ok"},
		{"delete nested again", "DELETE", "/config/uploads/l1/l2/n.txt", "", 404, ""},
	})
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "l1", "l2")); !os.IsNotExist(err) {
		t.Fatalf("empty folder l1/l2 left behind: %v", err)
	}
	if b, err := os.ReadFile(beside); err != nil || string(b) != "near" {
		t.Fatalf("the folder's other file went too: %q %v", b, err)
	}
}

type formFile struct{ field, file, content string }

// postForm posts a multipart/form-data upload with the parts given (a part
// without a file name is a plain field) and returns the status and body.
func postForm(t *testing.T, url string, parts ...formFile) (int, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		var w io.Writer
		var err error
		if p.file != "" {
			w, err = mw.CreateFormFile(p.field, p.file)
		} else {
			w, err = mw.CreateFormField(p.field)
		}
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, p.content) //nolint:errcheck // a buffer
	}
	mw.Close()
	resp, b := servertest.Request(t, http.MethodPost, url+"/config/uploads", buf.String(),
		map[string]string{"Content-Type": mw.FormDataContentType()})
	return resp.StatusCode, b
}
