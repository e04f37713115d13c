package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/clock"
)

// maxImportTasks bounds the asynchronous import tasks kept for
// GET /async/task/{id}; the oldest finished ones are forgotten first.
const maxImportTasks = 100

// Task states of eKuiper's asynchronous tasks.
const (
	taskRunning = "running"
	taskFinish  = "finish"
	taskError   = "error"
	taskCancel  = "cancel"
)

// importTask is eKuiper's async task status (GET /async/task/{id}).
type importTask struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Created int64  `json:"createdTimestamp"`
	Updated int64  `json:"updatedTimestamp"`

	cancel context.CancelFunc
}

// imports holds the answer of the latest data import (GET
// /data/import/status) and the asynchronous import tasks. Each task's
// goroutine is owned by its task: it ends when the import ends, and
// POST /async/task/{id}/cancel cancels its context (an import cancelled
// before it changed anything changes nothing; one cancelled while it
// writes stops at the next item).
type imports struct {
	clk    clock.Clock
	mu     sync.Mutex
	status map[string]map[string]string
	tasks  map[string]*importTask
	order  []string // task ids, oldest first
	seq    int64
}

func newImports(clk clock.Clock) *imports {
	return &imports{clk: clk, tasks: map[string]*importTask{}}
}

func (im *imports) setStatus(resp map[string]map[string]string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.status = resp
}

// lastStatus is the latest import's per-section answer; before any import,
// every section empty.
func (im *imports) lastStatus() map[string]map[string]string {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.status != nil {
		return im.status
	}
	return (&importResult{errs: map[string]map[string]string{}}).configResponse()
}

// register records a running task and returns it with its context.
func (im *imports) register() (*importTask, context.Context) {
	im.mu.Lock()
	defer im.mu.Unlock()
	now := im.clk.Now()
	// eKuiper names tasks dataImport-<unix seconds>; the sequence keeps
	// two tasks of one second apart.
	im.seq++
	id := fmt.Sprintf("dataImport-%d", now.Unix())
	if im.seq > 1 {
		id = fmt.Sprintf("dataImport-%d-%d", now.Unix(), im.seq)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &importTask{ID: id, Status: taskRunning, Created: now.Unix(), Updated: now.Unix(), cancel: cancel}
	im.tasks[id] = t
	im.order = append(im.order, id)
	for i := 0; len(im.order) > maxImportTasks && i < len(im.order); {
		old := im.tasks[im.order[i]]
		if old.Status == taskRunning {
			i++
			continue
		}
		delete(im.tasks, old.ID)
		im.order = append(im.order[:i], im.order[i+1:]...)
	}
	return t, ctx
}

// finish sets a task's final state unless it was cancelled.
func (im *imports) finish(t *importTask, status, msg string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	t.cancel()
	if t.Status == taskCancel {
		return
	}
	t.Status, t.Message, t.Updated = status, msg, im.clk.Now().Unix()
}

func (im *imports) task(id string) (importTask, bool) {
	im.mu.Lock()
	defer im.mu.Unlock()
	t, ok := im.tasks[id]
	if !ok {
		return importTask{}, false
	}
	return *t, true
}

// cancelTask marks a task cancelled and cancels its import; a task that
// ended already is left as it is (409).
func (im *imports) cancelTask(id string) (found, cancelled bool) {
	im.mu.Lock()
	defer im.mu.Unlock()
	t, ok := im.tasks[id]
	if !ok {
		return false, false
	}
	if t.Status != taskRunning {
		return true, false
	}
	t.Status, t.Updated = taskCancel, im.clk.Now().Unix()
	t.cancel()
	return true, true
}

func (s *Server) importTaskRoutes() {
	s.handle("GET /data/import/status", s.importStatus)
	s.handle("POST /async/data/import", s.asyncImport)
	s.handle("GET /async/task/{id}", s.asyncTask)
	s.handle("POST /async/task/{id}/cancel", s.cancelAsyncTask)
}

// importStatus is GET /data/import/status: the per-section errors of the
// latest data import, in the shape of the export document.
func (s *Server) importStatus(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, s.imports.lastStatus())
}

// asyncImport is POST /async/data/import: the document is read and decoded
// now (a bad body is 400 at once), then imported as /data/import does in a
// task whose state GET /async/task/{id} reports.
func (s *Server) asyncImport(w http.ResponseWriter, r *http.Request) error {
	d, partial, err := s.importRequest(r)
	if err != nil {
		return err
	}
	t, ctx := s.imports.register()
	go func() {
		resp, err := s.applyImport(ctx, d, partial)
		if err != nil {
			s.imports.finish(t, taskError, err.Error())
			return
		}
		b, _ := json.Marshal(resp)
		s.imports.finish(t, taskFinish, string(b))
	}()
	return writeJSON(w, http.StatusOK, map[string]string{"id": t.ID})
}

func (s *Server) asyncTask(w http.ResponseWriter, r *http.Request) error {
	t, ok := s.imports.task(r.PathValue("id"))
	if !ok {
		return notFound(fmt.Errorf("async task %s", r.PathValue("id")))
	}
	return writeJSON(w, http.StatusOK, t)
}

func (s *Server) cancelAsyncTask(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	found, cancelled := s.imports.cancelTask(id)
	switch {
	case !found:
		return notFound(fmt.Errorf("async task %s", id))
	case !cancelled:
		return fmt.Errorf("async task %s has ended: %w", id, catalog.ErrConflict)
	}
	return writeText(w, http.StatusOK, "cancel success")
}
