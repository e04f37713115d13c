// Rule test: run a rule over sample records on the virtual clock (POST
// /rules/replay, the engine of `kuiper test`) and set the expected
// emissions beside the actual ones. The case is built as text, never
// through JSON.parse and back, so 31.0 stays a float and 31 an integer.
import * as api from "../api.js";
import { h, errorBox, field, notice } from "../ui.js";
import { sqlEditor } from "../editor.js";

const exampleStreams = 'CREATE STREAM sensor (id BIGINT, temp FLOAT) WITH (DATASOURCE="sensor", FORMAT="json");';
const exampleSQL = "SELECT count(*) AS hot, max(temp) AS peak FROM sensor WHERE temp > 30 GROUP BY TUMBLINGWINDOW(ss, 1)";
const exampleInputs = '100 {"id": 1, "temp": 21.5}\n600 {"id": 2, "temp": 31.0}\n1300 {"id": 3, "temp": 35.5}\n2400 {"id": 4, "temp": 19.0}';
const exampleExpected = '[{"hot": 1, "peak": 31.0}]\n[{"hot": 1, "peak": 35.5}]';

const ddlName = /^\s*create\s+(?:stream|table)\s+`?([A-Za-z0-9_\-.]+)`?/i;
const inputLine = /^(\d+)\s+(?:([A-Za-z_][\w.-]*)\s+)?(\{.*\})$/;

// statements splits the definitions at a semicolon that ends a line.
function statements(text) {
  return text
    .split(/;[ \t]*(?:\n|$)/)
    .map((s) => s.trim())
    .filter(Boolean);
}

// sampleValue is a placeholder of a schema type, in the case's notation.
function sampleValue(t) {
  switch (t && t.type) {
    case "bigint":
      return "0";
    case "float":
      return "0.0";
    case "string":
      return '""';
    case "boolean":
      return "false";
    case "array":
      return "[]";
    case "struct":
      return "{}";
    default:
      return "null";
  }
}

// buildCase turns the form into the text of a case; a mistake throws an
// Error naming the line.
export function buildCase(form) {
  const defs = statements(form.streams);
  const names = defs.map((s) => (ddlName.exec(s) || [])[1]).filter(Boolean);
  if (!names.length) throw new Error("Streams: add at least one CREATE STREAM statement.");
  const start = form.start.trim() || "0";
  if (!/^\d+$/.test(start)) throw new Error("Start time: a whole number of milliseconds since the epoch.");
  const opts = form.options.trim() || "{}";
  let parsed;
  try {
    parsed = JSON.parse(opts);
  } catch (err) {
    throw new Error("Options are not valid JSON: " + err.message);
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("Options: a JSON object such as {\"sendError\": true}.");

  const records = [];
  form.inputs.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    const m = inputLine.exec(line);
    if (!m) throw new Error(`Inputs line ${i + 1}: write the milliseconds after the start, optionally a stream name, then the record as a JSON object.`);
    const stream = m[2] || names[0];
    if (!names.includes(stream)) throw new Error(`Inputs line ${i + 1}: no definition of a stream named ${stream}.`);
    try {
      const v = JSON.parse(m[3]);
      if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error("not an object");
    } catch (err) {
      throw new Error(`Inputs line ${i + 1}: the record is not a JSON object (${err.message}).`);
    }
    records.push({ at: BigInt(start) + BigInt(m[1]), stream, data: m[3] });
  });
  records.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  const inputs = new Map();
  const timeline = records.map((r) => {
    const list = inputs.get(r.stream) || [];
    inputs.set(r.stream, list);
    list.push(`{"ts": ${r.at}, "arrival": ${r.at}, "data": ${r.data}}`);
    return `{"at": ${r.at}, "stream": ${JSON.stringify(r.stream)}, "index": ${list.length - 1}}`;
  });

  const expected = [];
  form.expected.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    let v;
    try {
      v = JSON.parse(line);
    } catch (err) {
      throw new Error(`Expected line ${i + 1}: not valid JSON (${err.message}).`);
    }
    if (!Array.isArray(v)) throw new Error(`Expected line ${i + 1}: one emission is a JSON array of rows, such as [{"a": 1}].`);
    expected.push(line);
  });

  const parts = [
    `"name": "console"`,
    `"suite": "console"`,
    `"streams": [${defs.map((s) => JSON.stringify(s)).join(", ")}]`,
    `"stream_names": ${JSON.stringify(names)}`,
    `"inputs": {${[...inputs].map(([s, l]) => `${JSON.stringify(s)}: [\n  ${l.join(",\n  ")}]`).join(",\n ")}}`,
    `"start_time": ${start}`,
    `"timeline": [\n  ${timeline.join(",\n  ")}]`,
    `"end_time": ${records.length ? records[records.length - 1].at : start}`,
    `"rule": {"sql": ${JSON.stringify(form.sql)}, "options": ${opts}}`,
  ];
  if (expected.length) parts.push(`"expected": [\n  ${expected.join(",\n  ")}]`);
  return "{\n " + parts.join(",\n ") + "\n}\n";
}

// fieldDiffs names the fields that differ between two emissions' texts;
// it cannot see 31 against 31.0 (JSON.parse makes both 31), which the
// server's reason reports.
function fieldDiffs(expText, actText) {
  let e, a;
  try {
    e = JSON.parse(expText);
    a = JSON.parse(actText);
  } catch {
    return [];
  }
  const out = [];
  for (let j = 0; j < Math.max(e.length, a.length); j++) {
    const er = e[j] || {};
    const ar = a[j] || {};
    for (const k of new Set([...Object.keys(er), ...Object.keys(ar)])) {
      const ev = k in er ? JSON.stringify(er[k]) : "(absent)";
      const av = k in ar ? JSON.stringify(ar[k]) : "(absent)";
      if (ev !== av) out.push(`row ${j} ${k}: expected ${ev}, actual ${av}`);
    }
  }
  return out;
}

// resultTable sets the emissions of one run side by side.
function resultTable(run, caption) {
  const rows = run.emissions.map((e) => {
    const judged = e.match !== undefined;
    const cls = !judged ? "" : e.match ? "match" : "differs";
    const code = (t) => (t === undefined ? h("span", { class: "none" }, "—") : h("code", {}, t));
    const verdict = !judged ? "" : e.match ? "✓ match" + (e.reason ? ` (${e.reason})` : "") : "✗ differs: " + e.reason;
    const diffs = judged && !e.match && e.expected !== undefined && e.actual !== undefined ? fieldDiffs(e.expected, e.actual) : [];
    return h(
      "tr",
      { class: cls, "data-index": String(e.index) },
      h("th", { scope: "row" }, String(e.index)),
      h("td", {}, code(e.expected)),
      h("td", {}, code(e.actual)),
      h("td", { class: "verdict" }, verdict, diffs.length ? h("ul", { class: "diffs" }, diffs.map((d) => h("li", {}, h("mark", {}, d)))) : null),
    );
  });
  return h(
    "table",
    { class: "replay" },
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, ["#", "Expected", "Actual", "Result"].map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 4 }, "The rule emitted nothing."))),
  );
}

export async function ruleTest(ctx) {
  const streams = h("textarea", { id: "rt-streams", rows: 3, class: "code", spellcheck: "false" });
  streams.value = exampleStreams;
  const pick = h("select", { id: "rt-pick" }, h("option", { value: "" }, "(choose a stream or table)"));
  const load = h("button", { type: "button", id: "rt-load" }, "Add its definition");
  const sql = sqlEditor("rt-sql", "Rule SQL", exampleSQL, 4);
  const options = h("input", { id: "rt-options", class: "code", spellcheck: "false", autocomplete: "off", value: "{}" });
  const start = h("input", { id: "rt-start", inputmode: "numeric", autocomplete: "off", value: "1700000000000" });
  const inputs = h("textarea", { id: "rt-inputs", rows: 6, class: "code", spellcheck: "false" });
  inputs.value = exampleInputs;
  const expected = h("textarea", { id: "rt-expected", rows: 4, class: "code", spellcheck: "false" });
  expected.value = exampleExpected;
  const status = h("div", { id: "rt-status" });
  const verdict = h("p", { id: "rt-verdict", role: "status", "aria-live": "polite" });
  const results = h("div", { id: "rt-results" });
  const useActual = h("button", { type: "button", id: "rt-use-actual", hidden: true }, "Use the actual output as expected");
  const download = h("a", { id: "rt-download", download: "rule-test.json", hidden: true }, "Save as a kuiper test file");
  const caseText = h("pre", { id: "rt-case", class: "case" });
  const caseBox = h("details", { id: "rt-case-box", hidden: true }, h("summary", {}, "The case as a kuiper test file"), caseText);
  let last = null; // the last answer

  const form = h(
    "form",
    { id: "rt-form" },
    h("div", { class: "field" }, h("label", { for: "rt-pick" }, "Load a definition from the catalog"), h("div", { class: "actions" }, pick, load)),
    field("Streams (CREATE STREAM or CREATE TABLE statements, each ending with ;)", streams, "The definitions the rule reads. The records below are rows as a decoder would produce them: FORMAT does not apply."),
    sql.el,
    field("Options (JSON)", options, 'Rule options, e.g. {"isEventTime": true} or {"sendError": true}; unset ones are off.'),
    field("Start time (ms since the epoch)", start, "The virtual clock starts here; processing-time windows align to it."),
    field("Inputs, one record per line", inputs, 'Milliseconds after the start, optionally the stream name (else the first stream), then the record: 600 {"temp": 31.0} or 600 sensor {"temp": 31.0}.'),
    field("Expected output, one emission per line", expected, 'A JSON array of rows per emission, e.g. [{"hot": 1}]; empty to see the output only. 31 is an integer and 31.0 a float: they do not match.'),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Run"), useActual, download),
    status,
  );
  ctx.main.replaceChildren(
    h("h1", {}, "Rule test"),
    h("p", {}, "Runs a rule over sample records on a virtual clock, as kuiper test does, and compares its output with what you expect. Nothing is stored, connected or sent."),
    form,
    h("section", { "aria-labelledby": "rt-res-h" }, h("h2", { id: "rt-res-h" }, "Result"), verdict, results, caseBox),
  );

  const [sn, tn, exp] = await Promise.all([api.get("/streams"), api.get("/tables"), api.post("/ruleset/export")]);
  for (const [list, kind] of [
    [sn, "stream"],
    [tn, "table"],
  ])
    for (const n of list) pick.append(h("option", { value: kind + ":" + n }, `${n} (${kind})`));
  load.addEventListener("click", async () => {
    const [kind, name] = pick.value.split(/:(.*)/s);
    if (!name) return notice("Choose a stream or table first.", true);
    const stmt = (kind === "table" ? exp.tables : exp.streams)[name];
    if (!stmt) return notice(`No statement of ${kind} ${name}.`, true);
    const ours = statements(streams.value).filter((s) => (ddlName.exec(s) || [])[1] !== name);
    streams.value = [...ours, stmt.trim().replace(/;$/, "")].map((s) => s + ";").join("\n");
    // A sample record from the schema, so the input format is plain.
    try {
      const schema = await api.get(`/${kind}s/${encodeURIComponent(name)}/schema`);
      const fields = Object.entries(schema || {}).map(([f, t]) => `${JSON.stringify(f)}: ${sampleValue(t)}`);
      const sample = `0 ${name} {${fields.join(", ")}}`;
      if (!inputs.value.split("\n").includes(sample)) inputs.value = (inputs.value.trim() ? inputs.value.trimEnd() + "\n" : "") + sample;
    } catch (err) {
      if (!ctx.signal.aborted) notice(err.message, true);
      return;
    }
    notice(`Added the definition of ${kind} ${name} and a sample record.`);
  });
  useActual.addEventListener("click", () => {
    if (!last) return;
    expected.value = last.runs[0].emissions
      .filter((e) => e.actual !== undefined)
      .map((e) => e.actual)
      .join("\n");
    expected.focus();
  });
  ctx.signal.addEventListener("abort", () => download.href && URL.revokeObjectURL(download.href));

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    status.replaceChildren();
    sql.clear();
    let body;
    try {
      body = buildCase({ streams: streams.value, sql: sql.area.value, options: options.value, start: start.value, inputs: inputs.value, expected: expected.value });
    } catch (err) {
      status.replaceChildren(errorBox(err));
      return;
    }
    if (download.href) URL.revokeObjectURL(download.href);
    download.href = URL.createObjectURL(new Blob([body], { type: "application/json" }));
    download.hidden = false;
    caseText.textContent = body;
    caseBox.hidden = false;
    verdict.textContent = "Running…";
    verdict.className = "";
    results.replaceChildren();
    try {
      last = await api.post("/rules/replay", body);
    } catch (err) {
      if (ctx.signal.aborted) return;
      last = null;
      useActual.hidden = true;
      verdict.textContent = "";
      // Only the rule's own errors are marked in the SQL editor.
      if (/streams\[\d+\]/.test(err.message) || !sql.show(err)) status.replaceChildren(errorBox(err));
      return;
    }
    if (ctx.signal.aborted) return;
    const judged = last.passed !== undefined;
    const n = last.runs[0].emissions.filter((x) => x.actual !== undefined).length;
    verdict.className = !judged ? "" : last.passed ? "ok" : "error";
    verdict.dataset.passed = judged ? String(last.passed) : "";
    const failed = last.runs.find((r) => r.passed === false);
    verdict.textContent = !judged
      ? `Ran: the rule emitted ${n} time${n === 1 ? "" : "s"} (no expected output given).`
      : last.passed
        ? `Passed: all ${last.runs[0].emissions.length} emissions as expected.`
        : `Failed: ${failed.mismatch}.`;
    results.replaceChildren(
      ...last.runs.map((r) => resultTable(r, last.runs.length > 1 ? `Expected and actual emissions with options ${JSON.stringify(r.options)}` : "Expected and actual emissions")),
    );
    useActual.hidden = false;
  });
}
