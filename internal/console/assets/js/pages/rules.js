// Rules: the list with states and a sparkline of the last hour, and the
// form that creates or edits a rule.
import * as api from "../api.js";
import { h, table, errorBox, notice, field, stateBadge } from "../ui.js";
import { sqlEditor } from "../editor.js";
import { sparkline } from "../chart.js";
import { actionsEditor } from "../actions.js";
import { sqlKeywords } from "../sqlhl.js";

export async function rules(ctx) {
  const body = h("div", {});
  ctx.main.replaceChildren(h("h1", {}, "Rules"), h("p", {}, h("a", { href: "#/rules/new", class: "button" }, "New rule")), body);
  const refresh = async () => {
    const list = await api.get("/rules");
    const hists = await Promise.all(list.map((r) => api.get(`/rules/${encodeURIComponent(r.id)}/metrics/history`).catch(() => ({ points: [] }))));
    const rows = list.map((r, i) =>
      h(
        "tr",
        {},
        h("td", {}, h("a", { href: `#/rules/${encodeURIComponent(r.id)}` }, r.id)),
        h("td", {}, r.name || ""),
        h("td", {}, stateBadge(r.status)),
        h("td", {}, sparkline(hists[i].points, "recordsOut", `records out of ${r.id}`)),
        h("td", { class: "actions" }, lifecycleButtons(r, refresh)),
      ),
    );
    body.replaceChildren(table("Rules", ["ID", "Name", "State", "Out, last hour", "Actions"], rows));
  };
  await refresh();
  ctx.every(3000, () => refresh().catch(() => {}));
}

// lifecycleButtons are start, stop and restart for one rule; done runs
// after a successful call.
export function lifecycleButtons(r, done) {
  const btn = (verb, label) => {
    const b = h("button", { type: "button", class: "small", "aria-label": `${label} rule ${r.id}` }, label);
    b.addEventListener("click", async () => {
      try {
        notice(await api.post(`/rules/${encodeURIComponent(r.id)}/${verb}`));
        done();
      } catch (err) {
        notice(err.message, true);
      }
    });
    return b;
  };
  const running = r.status === "running" || r.status === "starting";
  return [running ? btn("stop", "Stop") : btn("start", "Start"), btn("restart", "Restart")];
}

// sqlWords returns the completion candidates of the rule editor: streams
// and tables, their fields (GET /streams/{name}/schema), the functions
// (GET /metadata/functions) and keywords; fetched once per form.
function sqlWords() {
  let cached = null;
  const load = async () => {
    const [streams, tables, fns] = await Promise.all([api.get("/streams"), api.get("/tables"), api.get("/metadata/functions")]);
    const schemas = await Promise.all([
      ...streams.map((n) => api.get(`/streams/${encodeURIComponent(n)}/schema`).catch(() => ({}))),
      ...tables.map((n) => api.get(`/tables/${encodeURIComponent(n)}/schema`).catch(() => ({}))),
    ]);
    const names = [...streams.map((n) => ({ label: n, kind: "stream" })), ...tables.map((n) => ({ label: n, kind: "table" }))];
    const fields = new Map();
    [...streams, ...tables].forEach((n, i) => Object.keys(schemas[i] || {}).forEach((f) => fields.set(f, `field of ${n}`)));
    const funcs = fns.flatMap((g) => g.functions.map((f) => ({ label: f.name, kind: f.aggregate ? "aggregate" : "function" })));
    return [...names, ...[...fields].map(([label, kind]) => ({ label, kind })), ...funcs, ...sqlKeywords.map((k) => ({ label: k.toUpperCase(), kind: "keyword" }))];
  };
  return () => (cached = cached || load().catch((err) => ((cached = null), Promise.reject(err))));
}

// ruleForm creates (id null) or edits a rule.
export async function ruleForm(ctx, id) {
  const def = id ? await api.get(`/rules/${encodeURIComponent(id)}`) : null;
  const idInput = h("input", { id: "rule-id", required: true, autocomplete: "off", value: id || "" });
  if (id) idInput.readOnly = true;
  const name = h("input", { id: "rule-name", autocomplete: "off", value: (def && def.name) || "" });
  const sql = sqlEditor("rule-sql", "SQL", def ? def.sql : "SELECT * FROM demo", 6, sqlWords());
  const actions = await actionsEditor(def ? def.actions : null);
  const options = h("textarea", { id: "rule-options", rows: 3, class: "code", spellcheck: "false" });
  options.value = def && def.options ? JSON.stringify(def.options, null, 2) : "{}";
  const status = h("div", {});
  const form = h(
    "form",
    { id: "rule-form" },
    field("ID", idInput, "Letters, digits, _ and -."),
    field("Name", name),
    sql.el,
    actions.el,
    field("Options (JSON)", options, "Rule options; empty for the daemon's defaults."),
    h("button", { type: "submit" }, id ? "Save" : "Create"),
    " ",
    h("a", { href: id ? `#/rules/${encodeURIComponent(id)}` : "#/rules" }, "Cancel"),
    status,
  );
  ctx.main.replaceChildren(h("h1", {}, id ? `Edit rule ${id}` : "New rule"), form);

  // Validate as the user types (debounced): an SQL error is marked at
  // its position without saving anything.
  let timer = 0;
  const validate = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const body = build(true);
      if (!body) return;
      try {
        await api.post("/rules/validate", body);
        status.replaceChildren();
      } catch (err) {
        if (ctx.signal.aborted) return;
        if (!sql.show(err, false)) status.replaceChildren(errorBox(err));
      }
    }, 800);
  };
  ctx.signal.addEventListener("abort", () => clearTimeout(timer));
  sql.area.addEventListener("input", validate);

  function build(quiet) {
    try {
      const body = { id: idInput.value.trim(), sql: sql.area.value, actions: actions.values() };
      if (name.value) body.name = name.value;
      const opts = JSON.parse(options.value || "{}");
      if (Object.keys(opts).length) body.options = opts;
      if (!body.id && quiet) body.id = "validate";
      return body;
    } catch (err) {
      if (!quiet) status.replaceChildren(errorBox(err instanceof SyntaxError ? new Error("Options are not valid JSON: " + err.message) : err));
      return null;
    }
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    clearTimeout(timer);
    status.replaceChildren();
    const body = build(false);
    if (!body) return;
    try {
      notice(id ? await api.put(`/rules/${encodeURIComponent(id)}`, body) : await api.post("/rules", body));
      ctx.go(`#/rules/${encodeURIComponent(body.id)}`);
    } catch (err) {
      if (!sql.show(err)) status.replaceChildren(errorBox(err));
    }
  });
  sql.area.focus();
}
