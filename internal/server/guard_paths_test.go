package server_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rekuiper/rekuiper/internal/server/servertest"
	"github.com/rekuiper/rekuiper/internal/testwait"
)

// pathDaemon is a daemon (basic.allowExternalFileAccess false, the
// default) with a folder outside its data folder holding one file.
type pathDaemon struct {
	t       *testing.T
	d       *servertest.Daemon
	outside string
}

func newPathDaemon(t *testing.T) *pathDaemon {
	t.Helper()
	base := t.TempDir()
	d := servertest.Start(t, servertest.Options{Dir: filepath.Join(base, "kuiper")})
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "keep.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	return &pathDaemon{t: t, d: d, outside: outside}
}

// link makes data/<name> (folders made on the way) a symbolic link to
// target.
func (p *pathDaemon) link(name, target string) {
	p.t.Helper()
	l := filepath.Join(p.d.Data, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(l), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.Symlink(target, l); err != nil {
		p.t.Fatal(err)
	}
}

// want sends a JSON request and checks the status and a part of the body.
func (p *pathDaemon) want(method, path, body string, status int, contains string) string {
	p.t.Helper()
	resp, got := servertest.RequestJSON(p.t, method, p.d.URL+path, body)
	if resp.StatusCode != status || !strings.Contains(got, contains) {
		p.t.Fatalf("%s %s: %d %s, want %d containing %q", method, path, resp.StatusCode, got, status, contains)
	}
	return got
}

// outsideHolds checks that the outside folder holds exactly keep.txt,
// unchanged, and the names given.
func (p *pathDaemon) outsideHolds(names ...string) {
	p.t.Helper()
	ents, err := os.ReadDir(p.outside)
	if err != nil {
		p.t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	want := append([]string{"keep.txt"}, names...)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		p.t.Fatalf("outside holds %v, want %v", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(p.outside, "keep.txt")); string(b) != "keep" {
		p.t.Fatalf("outside/keep.txt changed: %q", b)
	}
}

const outsideMsg = "outside the allowed folders"

// A symbolic link inside data/uploads lets no upload be written or
// deleted outside it: a folder linked out, a file linked out (dangling
// or not), and a folder swapped for a link after the upload.
func TestUploadThroughSymlink(t *testing.T) {
	p := newPathDaemon(t)
	p.link("uploads/evil", p.outside)
	p.link("uploads/stolen.txt", filepath.Join(p.outside, "stolen.txt"))
	p.link("uploads/keep.txt", filepath.Join(p.outside, "keep.txt"))

	p.want("POST", "/config/uploads", `{"name":"evil/x.txt","content":"pwned"}`, 422, outsideMsg)
	p.want("POST", "/config/uploads", `{"name":"evil/sub/x.txt","content":"pwned"}`, 422, outsideMsg)
	p.want("POST", "/config/uploads", `{"name":"stolen.txt","content":"pwned"}`, 422, outsideMsg)
	p.want("POST", "/config/uploads", `{"name":"keep.txt","content":"pwned"}`, 422, outsideMsg)
	resp, body := servertest.Request(t, "POST", p.d.URL+"/config/uploads",
		"--B\r\nContent-Disposition: form-data; name=\"uploadFile\"; filename=\"stolen.txt\"\r\n\r\npwned\r\n--B--\r\n",
		map[string]string{"Content-Type": "multipart/form-data; boundary=B"})
	if resp.StatusCode != 422 || !strings.Contains(body, outsideMsg) {
		t.Fatalf("multipart upload through the link: %d %s", resp.StatusCode, body)
	}
	p.outsideHolds()
	if got := p.want("GET", "/config/uploads", "", 200, ""); strings.TrimSpace(got) != "[]" {
		t.Fatalf("uploads listed: %s", got)
	}

	// An upload made in a real folder, which is then swapped for a link
	// to a folder holding a file of the same name.
	p.want("POST", "/config/uploads", `{"name":"dir/keep.txt","content":"mine"}`, 201, "keep.txt")
	dir := filepath.Join(p.d.Data, "uploads", "dir")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	p.link("uploads/dir", p.outside)
	p.want("DELETE", "/config/uploads/dir/keep.txt", "", 422, outsideMsg)
	p.outsideHolds()
	p.want("GET", "/config/uploads", "", 200, "dir/keep.txt") // nothing removed, the row neither
	// Without the link, the upload goes as usual.
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	p.want("DELETE", "/config/uploads/dir/keep.txt", "", 200, "ok")
	p.outsideHolds()
}

// A file stream or table whose absolute DATASOURCE (or path) is outside
// the data folder is refused when it is created, replaced, validated or
// imported: 422 naming the property, as docs/security.md says. A
// DATASOURCE that is not a file name is a 400, like every source
// property (docs/limits.md).
func TestFileStreamPathsAtCreate(t *testing.T) {
	p := newPathDaemon(t)
	p.link("in", p.outside)
	stmt := func(kind, name, with string) string {
		b, _ := json.Marshal(map[string]string{"sql": "CREATE " + kind + " " + name + " () WITH (TYPE=\"file\", " + with + ")"})
		return string(b)
	}
	outsideFile := filepath.Join(p.outside, "keep.txt")
	for _, with := range []string{
		`DATASOURCE="/etc/passwd"`,
		`DATASOURCE="` + outsideFile + `"`,
		`DATASOURCE="keep.txt", EXTRA='{"path":"` + p.outside + `"}'`,
		`DATASOURCE="keep.txt", EXTRA='{"path":"in"}'`, // a link out of the data folder
	} {
		p.want("POST", "/streams", stmt("STREAM", "s", with), 422, outsideMsg)
		p.want("POST", "/tables", stmt("TABLE", "t", with), 422, outsideMsg)
		p.want("POST", "/streams/validate", stmt("STREAM", "s", with), 200, outsideMsg)
	}
	p.want("POST", "/streams", stmt("STREAM", "s", `DATASOURCE="/etc/passwd"`), 422, `datasource \"/etc/passwd\" is outside the allowed folders`)
	p.want("POST", "/streams", stmt("STREAM", "s", `DATASOURCE="sub/a.json"`), 400, `datasource \"sub/a.json\" must be a file name inside path`)
	p.want("POST", "/streams", stmt("STREAM", "s", `DATASOURCE="`+filepath.Join(p.d.Data, "a.json")+`"`), 400, "must be a file name inside path")

	p.want("POST", "/streams", stmt("STREAM", "s", `DATASOURCE="a.json"`), 201, "")
	p.want("PUT", "/streams/s", stmt("STREAM", "s", `DATASOURCE="/etc/passwd"`), 422, outsideMsg)

	doc, _ := json.Marshal(map[string]map[string]string{"streams": {"imp": "CREATE STREAM imp () WITH (TYPE=\"file\", DATASOURCE=\"/etc/passwd\")"}})
	body, _ := json.Marshal(map[string]string{"content": string(doc)})
	p.want("POST", "/ruleset/import", string(body), 422, outsideMsg)
	p.want("GET", "/streams/imp", "", 404, "")
}

// A file sink whose path becomes a symbolic link out of the data folder
// (dangling: the file does not exist yet) after the rule was created
// writes nothing there; the rule's status names the problem. The same
// link present at create time is refused then.
func TestFileSinkSymlinkAtRunTime(t *testing.T) {
	p := newPathDaemon(t)
	stolen := filepath.Join(p.outside, "stolen.txt")
	p.want("POST", "/streams", `{"sql":"CREATE STREAM src () WITH (TYPE=\"memory\", DATASOURCE=\"guard/in\", FORMAT=\"json\")"}`, 201, "")
	p.link("early.txt", stolen)
	p.want("POST", "/rules", `{"id":"early","sql":"SELECT * FROM src","actions":[{"file":{"path":"early.txt"}}]}`, 422, `path \"`)

	p.want("POST", "/rules", `{"id":"late","sql":"SELECT * FROM src","actions":[{"file":{"path":"late.txt"}}]}`, 201, "")
	p.link("late.txt", stolen)
	testwait.Until(t, "the sink refuses the link", func() bool {
		p.d.Publish(t, "guard/in", map[string]any{"a": 1})
		_, body := servertest.RequestJSON(t, "GET", p.d.URL+"/rules/late/status", "")
		return strings.Contains(body, outsideMsg)
	})
	if _, err := os.Lstat(stolen); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the sink wrote outside the data folder: %v", err)
	}
	p.outsideHolds()
}

// Names that are not valid UTF-8, in a path or in a body (where the JSON
// decoder leaves U+FFFD for the invalid bytes), are refused with 400
// saying so, on every kind of name.
func TestInvalidUTF8Names(t *testing.T) {
	p := newPathDaemon(t)
	const inPath = "a%FFb"
	for _, path := range []string{
		"/streams/" + inPath, "/tables/" + inPath, "/rules/" + inPath, "/connections/" + inPath,
		"/schemas/protobuf/" + inPath,
	} {
		p.want("GET", path, "", 400, "is not valid UTF-8")
	}
	p.want("DELETE", "/config/uploads/"+inPath, "", 400, "is not valid UTF-8")
	for _, c := range []struct{ path, body string }{
		{"/streams", "{\"sql\":\"CREATE STREAM `a\xffb` () WITH (TYPE=\\\"memory\\\", DATASOURCE=\\\"t\\\")\"}"},
		{"/tables", "{\"sql\":\"CREATE TABLE `a\xffb` () WITH (TYPE=\\\"memory\\\", DATASOURCE=\\\"t\\\", KIND=\\\"lookup\\\", KEY=\\\"id\\\")\"}"},
		{"/rules", "{\"id\":\"a\xffb\",\"sql\":\"SELECT * FROM x\",\"actions\":[{\"log\":{}}]}"},
		{"/connections", "{\"id\":\"a\xffb\",\"typ\":\"mqtt\",\"props\":{\"server\":\"tcp://127.0.0.1:1\"}}"},
		{"/schemas/protobuf", "{\"name\":\"a\xffb\",\"content\":\"syntax = \\\"proto3\\\"; message M { string a = 1; }\"}"},
		{"/config/uploads", "{\"name\":\"a\xffb.txt\",\"content\":\"x\"}"},
	} {
		p.want("POST", c.path, c.body, 400, "is not valid UTF-8")
	}
}
