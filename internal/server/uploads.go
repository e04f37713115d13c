package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rekuiper/rekuiper/internal/catalog"
	access "github.com/rekuiper/rekuiper/internal/guard"
	"github.com/rekuiper/rekuiper/internal/rule"
)

// maxUpload bounds one uploaded file.
const maxUpload = 256 << 20

// uploadsPath is the route of uploads, the one route that takes a
// multipart/form-data body (see checkJSONBody).
const uploadsPath = "/config/uploads"

// uploadField is the form field of a multipart upload (eKuiper's name).
const uploadField = "uploadFile"

func (s *Server) uploadRoutes() {
	s.handle("GET "+uploadsPath, s.listUploads)
	s.handle("POST "+uploadsPath, s.upload)
	// {name...}: a name may have folders (see validUploadName).
	s.handle("DELETE "+uploadsPath+"/{name...}", s.deleteUpload)
}

// uploadDir is data/uploads, where uploaded files live, made absolute,
// with the guard every upload path goes through: confined to that folder
// whatever basic.allowExternalFileAccess says, so that a symbolic link
// inside it (to a folder or a file elsewhere) lets no upload be written
// or deleted outside it.
func (s *Server) uploadDir() (string, *access.Guard, error) {
	if s.opts.Config.Paths.Data == "" {
		return "", nil, errors.New("no data folder configured for uploads")
	}
	dir, err := filepath.Abs(filepath.Join(s.opts.Config.Paths.Data, "uploads"))
	if err != nil {
		return "", nil, err
	}
	return dir, access.In(dir), nil
}

// maxUploadPath bounds an upload name with its folders.
const maxUploadPath = 1024

// validUploadName refuses names that could leave the uploads folder or
// hide. A name is a relative path of '/'-separated elements, as in
// eKuiper ("csv/devices.csv" is the file devices.csv in the folder csv,
// created on upload); every element is a name the validator accepts, at
// most 255 bytes and not starting with a dot (so neither "." nor ".."),
// and no element is empty (no leading, trailing or doubled '/').
func validUploadName(name string) error {
	switch {
	case name == "":
		return badRequest("upload name is required")
	case len(name) > maxUploadPath:
		return badRequest("upload name longer than %d bytes", maxUploadPath)
	case strings.ContainsAny(name, "\\\x00"):
		return badRequest("upload name %q must not contain a backslash or NUL", name)
	}
	for _, elem := range strings.Split(name, "/") {
		switch {
		case elem == "":
			return badRequest("upload name %q has an empty path element (a leading, trailing or doubled /)", name)
		case len(elem) > 255:
			return badRequest("upload name %q: element longer than 255 bytes", name)
		case strings.HasPrefix(elem, "."):
			return badRequest("upload name %q: element %q must not start with a dot", name, elem)
		}
		if err := validName("upload", elem); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) listUploads(w http.ResponseWriter, r *http.Request) error {
	out := []string{}
	for _, u := range s.cat.Uploads() {
		out = append(out, u.Path)
	}
	slices.Sort(out)
	return writeJSON(w, http.StatusOK, out)
}

// upload stores a file under data/uploads from JSON {name, content} or
// {name, file}, where file is a file:// or http(s):// URL, or from a
// multipart/form-data body whose field uploadFile carries the file and its
// name. It answers 201 with the file's absolute path.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) error {
	var st *stagedUpload
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		var err error
		if st, err = s.uploadMultipart(r); err != nil {
			return err
		}
	} else {
		name, data, err := s.uploadBody(r)
		if err != nil {
			return err
		}
		if st, err = s.stageUpload(name, bytes.NewReader(data)); err != nil {
			return err
		}
	}
	defer st.discard()
	if err := st.guard.Rename("upload", st.tmp, "upload", st.path); errors.Is(err, access.ErrOutside) {
		return err
	} else if err != nil {
		return fmt.Errorf("upload %s: rename to %s: %w", st.name, st.path, err)
	}
	if _, err := s.cat.PutUpload(r.Context(), catalog.Upload{
		Name: st.name, Path: st.path, Size: st.size, SHA256: st.sha256,
	}, catalog.Upsert); err != nil {
		return err
	}
	return writeText(w, http.StatusCreated, "%s", st.path)
}

// stagedUpload is an upload written and synced to a temporary file next
// to its place, not yet renamed into it.
type stagedUpload struct {
	name, path, tmp, sha256 string
	size                    int64
	guard                   *access.Guard // the uploads folder's
}

// discard removes the temporary file (nothing once it was renamed).
func (st *stagedUpload) discard() { st.guard.Remove("upload", st.tmp) } //nolint:errcheck // gone after the rename

// stageUpload checks name and writes what rd holds (at most maxUpload
// bytes) to a synced temporary file in the uploads folder; renaming it
// into place is the caller's, so a crash leaves the old file or the new
// one, never a part.
func (s *Server) stageUpload(name string, rd io.Reader) (*stagedUpload, error) {
	if err := validUploadName(name); err != nil {
		return nil, err
	}
	dir, g, err := s.uploadDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	abs := filepath.Join(dir, filepath.FromSlash(name))
	// Refused before anything is made: a folder of the name that is a
	// symbolic link out of data/uploads.
	if err := g.Path("upload", abs); err != nil {
		return nil, err
	}
	// The file's folders are made on the way; the temporary file goes
	// next to the file, so the rename stays in one folder.
	into := filepath.Dir(abs)
	if err := g.MkdirAll("upload", into, 0o755); errors.Is(err, access.ErrOutside) {
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("create %s: %w", into, err)
	}
	tmp, err := g.CreateTemp("upload", into, ".upload-*")
	if errors.Is(err, access.ErrOutside) {
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("create temporary file: %w", err)
	}
	st := &stagedUpload{name: name, path: abs, tmp: tmp.Name(), guard: g}
	sum := sha256.New()
	if st.size, err = copyLimited(tmp, io.TeeReader(rd, sum), maxUpload); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		st.discard()
		return nil, fmt.Errorf("upload %s: %w", name, err)
	}
	st.sha256 = hex.EncodeToString(sum.Sum(nil))
	return st, nil
}

// copyLimited copies rd to f; more than limit bytes, or a failure to read
// rd (the client's body), is a 400.
func copyLimited(f *os.File, rd io.Reader, limit int64) (int64, error) {
	n, err := io.Copy(f, io.LimitReader(rd, limit+1))
	var pe *os.PathError
	switch {
	case errors.As(err, &pe):
		return n, err
	case err != nil:
		return n, badRequest("read: %v", err)
	case n > limit:
		return n, badRequest("larger than %d bytes", limit)
	}
	return n, nil
}

// uploadMultipart reads a multipart/form-data upload: exactly one part,
// the file field uploadFile, whose file name is the upload's name. The
// file streams to a temporary file, not to memory; any other part is
// refused, and then nothing is stored.
func (s *Server) uploadMultipart(r *http.Request) (*stagedUpload, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, badRequest("multipart form: %v", err)
	}
	var st *stagedUpload
	fail := func(err error) (*stagedUpload, error) {
		if st != nil {
			st.discard()
		}
		return nil, err
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		switch {
		case err != nil:
			return fail(badRequest("multipart form: %v", err))
		case part.FormName() != uploadField:
			return fail(badRequest("multipart form: unknown field %q; the file goes in field %q", part.FormName(), uploadField))
		case st != nil:
			return fail(badRequest("multipart form: more than one %q field; upload one file per request", uploadField))
		case part.FileName() == "":
			return fail(badRequest("multipart form: field %q carries no file name", uploadField))
		}
		if st, err = s.stageUpload(part.FileName(), part); err != nil {
			return fail(err)
		}
	}
	if st == nil {
		return nil, badRequest("multipart form: no %q field", uploadField)
	}
	return st, nil
}

func (s *Server) uploadBody(r *http.Request) (string, []byte, error) {
	var body struct {
		Name    string `json:"name"`
		Content string `json:"content"`
		File    string `json:"file"`
	}
	if err := decodeStrict(r, &body); err != nil {
		return "", nil, err
	}
	if err := validUploadName(body.Name); err != nil {
		return "", nil, err
	}
	switch {
	case body.Content != "" && body.File != "":
		return "", nil, badRequest("give either content or file, not both")
	case body.File != "":
		data, err := s.fetchFile(r.Context(), body.File, maxUpload)
		return body.Name, data, err
	}
	return body.Name, []byte(body.Content), nil
}

// fetchFile reads a file:// or http(s):// URL named by a client (imports,
// uploads), at most limit bytes, through the file and network guards: a
// file outside the allowed folders (basic.allowExternalFileAccess false) or
// an address that is not public (basic.enablePrivateNet false) is refused
// with 422 before anything is read or connected, so that the answer says
// neither whether a refused file exists nor whether a refused port is open.
func (s *Server) fetchFile(ctx context.Context, raw string, limit int64) ([]byte, error) {
	shown := rule.MaskText(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return nil, badRequest("invalid file url %q", shown)
	}
	var rd io.ReadCloser
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, badRequest("file url %q: want file:///absolute/path", shown)
		}
		p := u.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.dataDir(), p)
		}
		f, err := s.access.OpenFile("file", p, os.O_RDONLY, 0)
		if errors.Is(err, access.ErrOutside) {
			return nil, err
		} else if err != nil {
			return nil, badRequest("read %s: %v", p, err)
		}
		rd = f
	case "http", "https":
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
		if err != nil {
			return nil, badRequest("fetch %s: invalid url", shown)
		}
		client := s.access.HTTPClient(0)
		defer client.CloseIdleConnections()
		resp, err := client.Do(req)
		if errors.Is(err, access.ErrBlockedAddress) {
			return nil, fmt.Errorf("fetch %s: %w (basic.enablePrivateNet is false)", shown, access.ErrBlockedAddress)
		}
		if err != nil {
			return nil, badRequest("fetch %s: %v", shown, rule.MaskText(err.Error()))
		}
		if resp.StatusCode/100 != 2 {
			resp.Body.Close()
			return nil, badRequest("fetch %s: status %s", shown, resp.Status)
		}
		rd = resp.Body
	default:
		return nil, badRequest("file url %q: want file:// or http(s)://", shown)
	}
	defer rd.Close()
	data, err := io.ReadAll(io.LimitReader(rd, limit+1))
	if err != nil {
		return nil, badRequest("read %s: %v", shown, err)
	}
	if int64(len(data)) > limit {
		return nil, badRequest("file %s larger than %d bytes", shown, limit)
	}
	return data, nil
}

// deleteUpload removes an upload's row and file, and the folders the
// upload made once empty. A path of the upload that leads out of
// data/uploads through a symbolic link is refused (422) and nothing is
// removed.
func (s *Server) deleteUpload(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := validUploadName(name); err != nil {
		return err
	}
	if _, err := s.cat.Upload(name); err != nil {
		return err
	}
	dir, g, err := s.uploadDir()
	if err != nil {
		return err
	}
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := g.Path("upload", p); err != nil {
		return err
	}
	if err := s.cat.DeleteUpload(r.Context(), name); err != nil {
		return err
	}
	if err := g.Remove("upload", p); errors.Is(err, access.ErrOutside) {
		return err
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete upload %s: %w", name, err)
	}
	// Folders the upload made go with it once empty (Remove refuses a
	// folder that is not).
	for d := filepath.Dir(p); strings.HasPrefix(d, dir+string(filepath.Separator)); d = filepath.Dir(d) {
		if g.Remove("upload", d) != nil {
			break
		}
	}
	return writeText(w, http.StatusOK, "ok")
}
