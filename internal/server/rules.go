package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/rekuiper/rekuiper/internal/catalog"
	"github.com/rekuiper/rekuiper/internal/rule"
	"github.com/rekuiper/rekuiper/internal/rulemgr"
	"github.com/rekuiper/rekuiper/internal/sql/ast"
	"github.com/rekuiper/rekuiper/internal/sql/parser"
)

func (s *Server) ruleRoutes() {
	s.handle("GET /rules", s.listRules)
	s.handle("POST /rules", s.createRule)
	s.handle("POST /rules/validate", s.validateRule)
	s.handle("GET /rules/status/all", s.allStatus)
	s.handle("GET /rules/tags/match", s.matchTags)
	s.handle("POST /rules/bulkstart", s.bulk(true))
	s.handle("POST /rules/bulkstop", s.bulk(false))
	s.handle("GET /rules/{id}", s.getRule)
	s.handle("PUT /rules/{id}", s.upsertRule)
	s.handle("DELETE /rules/{id}", s.deleteRule)
	s.handle("POST /rules/{id}/start", s.lifecycle("started", s.rules.Start))
	s.handle("POST /rules/{id}/stop", s.lifecycle("stopped.", s.rules.Stop))
	s.handle("POST /rules/{id}/restart", s.lifecycle("restarted", s.rules.Restart))
	s.handle("GET /rules/{id}/status", s.ruleStatus)
	s.handle("GET /v2/rules/{id}/status", s.ruleStatusV2)
	s.handle("GET /rules/{id}/topo", s.ruleTopo)
	s.handle("GET /rules/{id}/explain", s.explainRule)
	s.handle("GET /rules/{id}/scantables", s.ruleScanTables)
	s.handle("PUT /rules/{id}/tags", s.ruleTags(rulemgr.TagsReplace))
	s.handle("PATCH /rules/{id}/tags", s.ruleTags(rulemgr.TagsAdd))
	s.handle("DELETE /rules/{id}/tags", s.ruleTags(rulemgr.TagsRemove))
}

func (s *Server) listRules(w http.ResponseWriter, r *http.Request) error {
	out := []map[string]any{}
	for _, st := range s.rules.List() {
		item := map[string]any{"id": st.ID, "name": "", "status": st.State.String(), "version": "", "trace": st.State == rulemgr.StateRunning && s.opts.Tracing.Enabled(st.ID), "tags": []string{}}
		if def, err := s.rules.Def(st.ID); err == nil {
			item["name"], item["version"] = def.Name, def.Version
			if def.Tags != nil {
				item["tags"] = def.Tags
			}
		}
		out = append(out, item)
	}
	return writeJSON(w, http.StatusOK, out)
}

// ruleBody decodes the rule JSON of a request's body.
func (s *Server) ruleBody(r *http.Request) (*rule.Def, error) {
	b, err := readBody(r)
	if err != nil {
		return nil, err
	}
	return s.rules.ParseDef(b)
}

func (s *Server) createRule(w http.ResponseWriter, r *http.Request) error {
	def, err := s.ruleBody(r)
	if err != nil {
		return err
	}
	if err := s.rules.Create(r.Context(), def); err != nil {
		return err
	}
	return writeText(w, http.StatusCreated, "Rule %s was created successfully.", def.ID)
}

// parseRuleForPath decodes a PUT body; a missing id takes the path's.
func (s *Server) parseRuleForPath(b []byte, id string) (*rule.Def, error) {
	var probe struct {
		ID *string `json:"id"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("%w: decode rule json: %v", rule.ErrMalformed, err)
	}
	if probe.ID == nil {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(b, &top); err != nil || top == nil {
			return nil, fmt.Errorf("%w: rule must be a json object", rule.ErrMalformed)
		}
		idJSON, _ := json.Marshal(id)
		top["id"] = idJSON
		b, _ = json.Marshal(top)
	} else if *probe.ID != id {
		return nil, badRequest("rule id %q in the body does not match %q in the path", *probe.ID, id)
	}
	return s.rules.ParseDef(b)
}

func (s *Server) upsertRule(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	b, err := readBody(r)
	if err != nil {
		return err
	}
	def, err := s.parseRuleForPath(b, id)
	if err != nil {
		return err
	}
	// eKuiper answers a PUT that creates the rule as one that updates it.
	if _, err := s.rules.Upsert(r.Context(), def); err != nil {
		return err
	}
	return writeText(w, http.StatusOK, "Rule %s was updated successfully.", id)
}

func (s *Server) getRule(w http.ResponseWriter, r *http.Request) error {
	b, err := s.ruleJSON(r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeRawJSON(w, http.StatusOK, []byte(b))
}

func (s *Server) deleteRule(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := s.rules.Delete(r.Context(), id); err != nil {
		return err
	}
	s.opts.Tracing.Forget(id)
	return writeText(w, http.StatusOK, "Rule %s is dropped.", id)
}

func (s *Server) lifecycle(verb string, op func(ctx context.Context, id string) error) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id := r.PathValue("id")
		if err := op(r.Context(), id); err != nil {
			return err
		}
		return writeText(w, http.StatusOK, "Rule %s was %s", id, verb)
	}
}

// statusFields returns the status object's keys in eKuiper's order: the
// rule-level fields, then the metrics sorted by key. Error texts (message,
// *_last_exception) have their secrets masked.
func (s *Server) statusFields(st rulemgr.Status) ([]string, map[string]any) {
	m := map[string]any{
		"status":             st.State.String(),
		"message":            rule.MaskText(st.Message),
		"lastStartTimestamp": st.LastStart,
		"lastStopTimestamp":  st.LastStop,
		"nextStartTimestamp": st.NextStart,
	}
	keys := []string{"status", "message", "lastStartTimestamp", "lastStopTimestamp", "nextStartTimestamp"}
	if id := s.opts.Cluster.ID(); id != "" {
		// The node that runs the rule: another one when st says so.
		if st.Node != "" {
			id = st.Node
		}
		m["node"] = id
		keys = append(keys, "node")
	}
	if st.Tasks != nil {
		for i := range st.Tasks {
			st.Tasks[i].Message = rule.MaskText(st.Tasks[i].Message)
		}
		m["tasks"] = st.Tasks
		keys = append(keys, "tasks")
	}
	mk := make([]string, 0, len(st.Metrics))
	for k := range st.Metrics {
		if _, dup := m[k]; !dup {
			mk = append(mk, k)
		}
	}
	slices.Sort(mk)
	for _, k := range mk {
		m[k] = st.Metrics[k]
		if sv, ok := m[k].(string); ok {
			m[k] = rule.MaskText(sv)
		}
	}
	return append(keys, mk...), m
}

func (s *Server) ruleStatus(w http.ResponseWriter, r *http.Request) error {
	st, err := s.rules.Status(r.PathValue("id"))
	if err != nil {
		return err
	}
	keys, m := s.statusFields(st)
	var buf bytes.Buffer
	buf.WriteString("{\n")
	for i, k := range keys {
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(m[k])
		if err != nil {
			return fmt.Errorf("encode status %s: %w", k, err)
		}
		fmt.Fprintf(&buf, "  %s: %s", kb, vb)
		if i < len(keys)-1 {
			buf.WriteString(",")
		}
		buf.WriteString("\n")
	}
	buf.WriteString("}")
	return writeRawJSON(w, http.StatusOK, buf.Bytes())
}

func (s *Server) ruleStatusV2(w http.ResponseWriter, r *http.Request) error {
	st, err := s.rules.Status(r.PathValue("id"))
	if err != nil {
		return err
	}
	_, m := s.statusFields(st)
	return writeJSON(w, http.StatusOK, m)
}

func (s *Server) allStatus(w http.ResponseWriter, r *http.Request) error {
	out := map[string]any{}
	for _, brief := range s.rules.List() {
		st, err := s.rules.Status(brief.ID)
		if err != nil {
			continue
		}
		var exc int64
		lastExc := st.Message
		for k, v := range st.Metrics {
			if strings.HasSuffix(k, "_exceptions_total") {
				if n, ok := v.(int64); ok {
					exc += n
				}
			}
			if strings.HasSuffix(k, "_last_exception") && lastExc == "" {
				if sv, ok := v.(string); ok {
					lastExc = sv
				}
			}
		}
		out[st.ID] = map[string]any{"status": st.State.String(), "last_exception": rule.MaskText(lastExc), "exceptions_total": exc}
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) ruleTopo(w http.ResponseWriter, r *http.Request) error {
	topo, err := s.rules.Topo(r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, topo)
}

// scanTableRowLimit bounds the rows GET /rules/{id}/scantables returns.
const scanTableRowLimit = 10000

// ruleScanTables answers the rows a running rule's join holds for its scan
// tables, in eKuiper's shape [{"emitter": table, "content": row}]. As in
// eKuiper, a rule that joins no scan table, or whose tables hold no row yet,
// gets 400.
func (s *Server) ruleScanTables(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	rows, err := s.rules.ScanTables(id, scanTableRowLimit)
	if errors.Is(err, rulemgr.ErrNoScanTable) {
		return badRequest("rule %s joins no scan table", id)
	}
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return badRequest("the scan tables of rule %s hold no rows yet", id)
	}
	out := make([]map[string]any, len(rows))
	for i, row := range rows {
		out[i] = map[string]any{"emitter": row.Table, "content": row.Row}
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) validateRule(w http.ResponseWriter, r *http.Request) error {
	def, err := s.ruleBody(r)
	if err != nil {
		return err
	}
	if err := s.rules.Validate(r.Context(), def); err != nil {
		return err
	}
	sources, err := rulemgr.Sources(def.SQL, s.cat)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"valid": true, "sources": sources})
}

// explainRule prints the logical plan of a rule's SQL, one JSON line per
// operator from the sink side, as eKuiper's explain does, with the secrets
// of its literals masked.
func (s *Server) explainRule(w http.ResponseWriter, r *http.Request) error {
	def, err := s.rules.Def(r.PathValue("id"))
	if err != nil {
		return err
	}
	stmt, err := parser.ParseSelect(def.SQL)
	if err != nil {
		return fmt.Errorf("%w: parse sql: %v", rule.ErrInvalid, err)
	}
	type node struct {
		Type string `json:"type"`
		Info string `json:"info"`
	}
	var plan []node
	fields := make([]string, len(stmt.Fields))
	for i, f := range stmt.Fields {
		fields[i] = f.Expr.String()
		if f.Alias != "" {
			fields[i] += " AS " + f.Alias
		}
	}
	plan = append(plan, node{"ProjectPlan", "Fields:[ " + strings.Join(fields, ", ") + " ]"})
	if stmt.HasLimit {
		plan = append(plan, node{"LimitPlan", fmt.Sprintf("Limit: %d", stmt.Limit)})
	}
	if len(stmt.OrderBy) > 0 {
		plan = append(plan, node{"OrderPlan", fmt.Sprintf("SortFields: %d", len(stmt.OrderBy))})
	}
	if stmt.Having != nil {
		plan = append(plan, node{"HavingPlan", "Condition:{ " + stmt.Having.String() + " }"})
	}
	if len(stmt.Dimensions) > 0 {
		dims := make([]string, len(stmt.Dimensions))
		for i, d := range stmt.Dimensions {
			dims[i] = d.String()
		}
		plan = append(plan, node{"AggregatePlan", "Dimension:{ " + strings.Join(dims, ", ") + " }"})
	}
	for _, j := range stmt.Joins {
		plan = append(plan, node{"JoinPlan", "Joins:[ " + j.Name + " ]"})
	}
	if stmt.Where != nil {
		plan = append(plan, node{"FilterPlan", "Condition:{ " + stmt.Where.String() + " }"})
	}
	if stmt.Window != nil {
		plan = append(plan, node{"WindowPlan", "window"})
	}
	plan = append(plan, node{"DataSourcePlan", "StreamName: " + stmt.From.Name})
	var buf bytes.Buffer
	for i, n := range plan {
		line, _ := json.Marshal(map[string]any{"type": n.Type, "info": rule.MaskText(n.Info), "id": i, "children": childOf(i, len(plan))})
		buf.WriteString(strings.Repeat("   ", i))
		buf.Write(line)
		buf.WriteString("\n")
	}
	return writeText(w, http.StatusOK, "%s", buf.String())
}

func childOf(i, n int) []int {
	if i+1 < n {
		return []int{i + 1}
	}
	return nil
}

type tagsBody struct {
	Tags []string `json:"tags"`
}

func (s *Server) ruleTags(op rulemgr.TagOp) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var body tagsBody
		if err := decodeStrict(r, &body); err != nil {
			return err
		}
		if err := s.rules.SetTags(r.Context(), r.PathValue("id"), op, body.Tags); err != nil {
			return err
		}
		return writeText(w, http.StatusOK, "success")
	}
}

func (s *Server) matchTags(w http.ResponseWriter, r *http.Request) error {
	var body tagsBody
	if err := decodeStrict(r, &body); err != nil {
		return err
	}
	ids := []string{}
	for _, ru := range s.cat.Rules(body.Tags...) {
		ids = append(ids, ru.ID)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"rules": ids})
}

func (s *Server) bulk(start bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var body tagsBody
		if err := decodeStrict(r, &body); err != nil {
			return err
		}
		if len(body.Tags) == 0 {
			return badRequest("field tags is required")
		}
		matched := s.cat.Rules(body.Tags...)
		if len(matched) == 0 {
			return fmt.Errorf("no rules match tags %v: %w", body.Tags, catalog.ErrNotFound)
		}
		out := make([]map[string]any, 0, len(matched))
		for _, ru := range matched {
			var err error
			if start {
				err = s.rules.Start(r.Context(), ru.ID)
			} else {
				err = s.rules.Stop(r.Context(), ru.ID)
			}
			item := map[string]any{"ruleId": ru.ID, "success": err == nil}
			if err != nil {
				item["error"] = rule.MaskText(err.Error())
			}
			out = append(out, item)
		}
		return writeJSON(w, http.StatusOK, out)
	}
}

// rulesWhere lists, in the order of s.rules.List, the rules whose stored
// definition match accepts; a rule whose definition cannot be read is left
// out.
func (s *Server) rulesWhere(match func(*rule.Def) bool) []string {
	var ids []string
	for _, st := range s.rules.List() {
		if def, err := s.rules.Def(st.ID); err == nil && match(def) {
			ids = append(ids, st.ID)
		}
	}
	return ids
}

// rulesWhoseSQL is rulesWhere over the rules' parsed SELECT; a rule with
// no SQL, or SQL that does not parse, is left out.
func (s *Server) rulesWhoseSQL(match func(*ast.SelectStmt) bool) []string {
	return s.rulesWhere(func(def *rule.Def) bool {
		if def.SQL == "" {
			return false
		}
		stmt, err := parser.ParseSelect(def.SQL)
		return err == nil && match(stmt)
	})
}

// streamsRead names the stream or table stmt reads FROM, then those it
// joins, in the statement's order.
func streamsRead(stmt *ast.SelectStmt) []string {
	names := []string{stmt.From.Name}
	for _, j := range stmt.Joins {
		names = append(names, j.Name)
	}
	return names
}
