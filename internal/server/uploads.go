package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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

func (s *Server) uploadRoutes() {
	s.handle("GET /config/uploads", s.listUploads)
	s.handle("POST /config/uploads", s.upload)
	s.handle("DELETE /config/uploads/{name}", s.deleteUpload)
}

// uploadDir is data/uploads, where uploaded files live.
func (s *Server) uploadDir() (string, error) {
	if s.opts.Config.Paths.Data == "" {
		return "", errors.New("no data folder configured for uploads")
	}
	return filepath.Join(s.opts.Config.Paths.Data, "uploads"), nil
}

// validUploadName refuses names that could leave the uploads folder or
// hide: empty, ".", "..", path separators, NUL, a leading dot.
func validUploadName(name string) error {
	switch {
	case name == "":
		return badRequest("upload name is required")
	case len(name) > 255:
		return badRequest("upload name longer than 255 bytes")
	case strings.ContainsAny(name, "/\\\x00"):
		return badRequest("upload name %q must not contain a path separator", name)
	case name == "." || name == ".." || strings.HasPrefix(name, "."):
		return badRequest("upload name %q must not start with a dot", name)
	}
	return validName("upload", name)
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
// {name, file}, where file is a file:// or http(s):// URL. It answers 201
// with the file's absolute path. (eKuiper's multipart form is refused
// before it gets here: the request guard takes JSON bodies only.)
func (s *Server) upload(w http.ResponseWriter, r *http.Request) error {
	name, data, err := s.uploadBody(r)
	if err != nil {
		return err
	}
	if err := validUploadName(name); err != nil {
		return err
	}
	dir, err := s.uploadDir()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("upload %s: %w", name, err)
	}
	if err := writeFileAtomic(abs, data); err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	if _, err := s.cat.PutUpload(r.Context(), catalog.Upload{
		Name: name, Path: abs, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]),
	}, catalog.Upsert); err != nil {
		return err
	}
	return writeText(w, http.StatusCreated, "%s", abs)
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
		if err := s.access.Path("file", p); err != nil {
			return nil, err
		}
		f, err := os.Open(p)
		if err != nil {
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

// writeFileAtomic writes data to path through a synced temporary file and
// a rename, so a crash leaves the old file or the new one.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".upload-*")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("fsync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename to %s: %w", path, err)
	}
	return nil
}

func (s *Server) deleteUpload(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := validUploadName(name); err != nil {
		return err
	}
	u, err := s.cat.Upload(name)
	if err != nil {
		return err
	}
	if err := s.cat.DeleteUpload(r.Context(), name); err != nil {
		return err
	}
	if err := os.Remove(u.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete upload %s: %w", name, err)
	}
	return writeText(w, http.StatusOK, "ok")
}
