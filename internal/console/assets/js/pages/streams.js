// Streams and tables: list, create or replace with a DDL editor, delete.
import * as api from "../api.js";
import { h, table, errorBox, notice, confirmAction } from "../ui.js";
import { sqlEditor } from "../editor.js";

const example = 'CREATE STREAM demo (temperature FLOAT, humidity BIGINT)\n  WITH (DATASOURCE="demo", TYPE="memory", FORMAT="json")';

const ddlName = /^\s*create\s+(stream|table)\s+`?([A-Za-z0-9_\-.]+)/i;

// ddlBase is the route of the statement's kind.
function ddlBase(sql) {
  const m = ddlName.exec(sql);
  return m && m[1].toLowerCase() === "table" ? "/tables" : "/streams";
}

export async function streams(ctx) {
  const list = h("section", { "aria-labelledby": "list-h" });
  const editor = sqlEditor("ddl", "Statement (CREATE STREAM or CREATE TABLE)", example, 5);
  const status = h("div", {});
  const replace = h("input", { type: "checkbox", id: "ddl-replace" });
  const form = h(
    "form",
    { id: "stream-form", "aria-labelledby": "create-h" },
    h("h2", { id: "create-h" }, "Create or replace"),
    editor.el,
    h("div", { class: "field inline" }, replace, h("label", { for: "ddl-replace" }, "Replace the existing definition of that name")),
    h("button", { type: "submit" }, "Save"),
    status,
  );
  ctx.main.replaceChildren(h("h1", {}, "Streams and tables"), list, form);

  const refresh = async () => {
    const [sd, td, exp] = await Promise.all([api.get("/streamdetails"), api.get("/tabledetails"), api.post("/ruleset/export")]);
    const rows = [...sd.map((s) => ({ ...s, kind: "stream" })), ...td.map((t) => ({ ...t, kind: "table" }))].map((s) => {
      const base = s.kind === "stream" ? "/streams/" : "/tables/";
      const sql = (s.kind === "stream" ? exp.streams : exp.tables)[s.name] || "";
      const edit = h("button", { type: "button", class: "small", "aria-label": `Edit ${s.kind} ${s.name}` }, "Edit");
      edit.addEventListener("click", () => {
        editor.area.value = sql;
        replace.checked = true;
        editor.area.focus();
      });
      const drop = h("button", { type: "button", class: "small danger", "aria-label": `Delete ${s.kind} ${s.name}` }, "Delete");
      drop.addEventListener("click", async () => {
        if (!confirmAction(`Delete ${s.kind} ${s.name}?`)) return;
        try {
          notice(await api.del(base + encodeURIComponent(s.name)));
          refresh();
        } catch (err) {
          notice(err.message, true);
        }
      });
      return h("tr", {}, h("td", {}, s.name), h("td", {}, s.kind), h("td", {}, s.type), h("td", {}, s.format), h("td", {}, h("code", {}, sql)), h("td", { class: "actions" }, edit, drop));
    });
    list.replaceChildren(h("h2", { id: "list-h" }, "Defined"), table("Streams and tables", ["Name", "Kind", "Type", "Format", "Statement", "Actions"], rows));
  };

  // Validate as the user types (debounced), storing nothing: an error is
  // marked at its line and column.
  let timer = 0;
  editor.area.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const sql = editor.area.value;
      if (!sql.trim()) return;
      try {
        const r = await api.post(`${ddlBase(sql)}/validate`, { sql });
        if (ctx.signal.aborted || sql !== editor.area.value) return;
        status.replaceChildren();
        if (r.valid) editor.area.setAttribute("data-valid", "true");
        else if (!editor.show({ message: r.message, pos: r.line ? { line: r.line, col: r.col } : null }, false)) status.replaceChildren(errorBox(new Error(r.message)));
      } catch (err) {
        if (!ctx.signal.aborted) status.replaceChildren(errorBox(err));
      }
    }, 600);
  });
  ctx.signal.addEventListener("abort", () => clearTimeout(timer));

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    clearTimeout(timer);
    status.replaceChildren();
    const sql = editor.area.value;
    const m = ddlName.exec(sql);
    const base = ddlBase(sql);
    try {
      const msg = replace.checked && m ? await api.put(`${base}/${encodeURIComponent(m[2])}`, { sql }) : await api.post(base, { sql });
      notice(msg);
      refresh();
    } catch (err) {
      if (!editor.show(err)) status.replaceChildren(errorBox(err));
    }
  });
  await refresh();
}
