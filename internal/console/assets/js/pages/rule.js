// One rule: state and lifecycle, counters refreshing, the topology with
// live per-node counters, activity charts, the live output tap and the
// last errors.
import * as api from "../api.js";
import { h, notice, errorBox, stateBadge, when, confirmAction } from "../ui.js";
import { historyChart } from "../chart.js";
import { topoGraph } from "../dag.js";
import { lifecycleButtons } from "./rules.js";
import { checkpointPanel, cachePanel } from "./rulepanels.js";

const keepRows = 100;

export async function rulePage(ctx, id) {
  const path = `/rules/${encodeURIComponent(id)}`;
  const head = h("div", { class: "rule-head" });
  const counters = h("section", { "aria-labelledby": "cnt-h" });
  const topo = h("section", { "aria-labelledby": "topo-h" });
  const chart = h("section", { "aria-labelledby": "hist-h" });
  const errors = h("section", { "aria-labelledby": "err-h" });
  const tapSec = h("section", { "aria-labelledby": "tap-h" });
  const ckpt = h("section", { "aria-labelledby": "ckpt-h" });
  const cache = h("section", { "aria-labelledby": "cache-h" });
  ctx.main.replaceChildren(h("h1", {}, `Rule ${id}`), head, counters, chart, topo, tapSec, errors, ckpt, cache);

  const refresh = async () => {
    const st = await api.get(`/v2${path}/status`);
    const brief = { id, status: st.status };
    const del = h("button", { type: "button", class: "small danger" }, "Delete");
    del.addEventListener("click", async () => {
      if (!confirmAction(`Delete rule ${id}?`)) return;
      try {
        notice(await api.del(path));
        ctx.go("#/rules");
      } catch (err) {
        notice(err.message, true);
      }
    });
    head.replaceChildren(
      h("p", {}, "State: ", h("span", { id: "rule-state" }, stateBadge(st.status)), st.message ? h("span", { class: "error" }, " ", st.message) : null),
      h("div", { class: "actions" }, lifecycleButtons(brief, refresh), h("a", { href: `#${path}/edit`, class: "button small" }, "Edit"), del),
    );
    counters.replaceChildren(h("h2", { id: "cnt-h" }, "Counters"), counterTable(st));
    errors.replaceChildren(h("h2", { id: "err-h" }, "Last errors"), errorList(st));
    ckpt.replaceChildren(h("h2", { id: "ckpt-h" }, "Checkpoints"), checkpointPanel(st));
    cache.replaceChildren(h("h2", { id: "cache-h" }, "Sink cache"), cachePanel(st));
    if (st.status === "running") {
      const t = await api.get(`${path}/topo`).catch(() => null);
      topo.replaceChildren(h("h2", { id: "topo-h" }, "Topology"), t ? topoGraph(t, st) : h("p", {}, "Not available."));
    } else {
      topo.replaceChildren(h("h2", { id: "topo-h" }, "Topology"), h("p", {}, "The topology is shown while the rule runs."));
    }
  };
  const refreshHistory = async () => {
    const hist = await api.get(`${path}/metrics/history`);
    chart.replaceChildren(h("h2", { id: "hist-h" }, "Activity, last hour"), historyChart(`Rule ${id}`, hist));
  };
  await Promise.all([refresh(), refreshHistory()]);
  ctx.every(1000, () => refresh().catch(() => {}));
  ctx.every(2000, () => refreshHistory().catch(() => {}));
  liveTap(ctx, tapSec, path);
}

// counterTable shows records in, out and errors of every node.
function counterTable(st) {
  const nodes = new Map();
  for (const [k, v] of Object.entries(st)) {
    const m = /^((?:source|op|sink)_.+)_0_(records_in_total|records_out_total|exceptions_total|process_latency_us)$/.exec(k);
    if (!m) continue;
    if (!nodes.has(m[1])) nodes.set(m[1], {});
    nodes.get(m[1])[m[2]] = v;
  }
  if (!nodes.size) return h("p", {}, "No counters while the rule is not running.");
  const rank = (n) => (n.startsWith("source_") ? 0 : n.startsWith("op_") ? 1 : 2);
  const order = [...nodes].sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b, undefined, { numeric: true }));
  const rows = order.map(([n, c]) =>
    h("tr", { "data-node": n }, h("th", { scope: "row" }, n), h("td", {}, String(c.records_in_total ?? 0)), h("td", {}, String(c.records_out_total ?? 0)), h("td", {}, String(c.exceptions_total ?? 0)), h("td", {}, String(c.process_latency_us ?? "–"))),
  );
  return h(
    "table",
    { id: "counters" },
    h("caption", {}, "Per node since the rule started"),
    h("thead", {}, h("tr", {}, ["Node", "Records in", "Records out", "Errors", "Latency µs"].map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, rows),
  );
}

function errorList(st) {
  const items = [];
  for (const [k, v] of Object.entries(st)) {
    const m = /^(.+)_last_exception$/.exec(k);
    if (!m || !v) continue;
    items.push({ node: m[1], msg: v, time: st[m[1] + "_last_exception_time"] || 0 });
  }
  items.sort((a, b) => b.time - a.time);
  if (!items.length) return h("p", {}, "No errors.");
  return h("ul", { class: "errors" }, items.map((e) => h("li", {}, h("time", {}, when(e.time)), " ", h("strong", {}, e.node), ": ", e.msg)));
}

// liveTap shows the rule's results as they are emitted, newest first,
// until the user pauses or leaves the page.
function liveTap(ctx, sec, path) {
  const out = h("ol", { id: "tap-rows", class: "tap", reversed: true });
  const info = h("p", { id: "tap-info" }, "Listening…");
  const toggle = h("button", { type: "button", class: "small", "aria-pressed": "false" }, "Pause");
  sec.replaceChildren(h("h2", { id: "tap-h" }, "Live output"), h("div", { class: "actions" }, toggle), info, out);
  let received = 0;
  let dropped = 0;
  let ctl = null;
  const start = () => {
    const mine = (ctl = new AbortController());
    const stop = () => mine.abort();
    ctx.signal.addEventListener("abort", stop);
    api
      .stream(
        `${path}/tap`,
        (ev) => {
          received++;
          dropped += ev.dropped || 0;
          info.textContent = `${received} emissions received` + (dropped ? `, ${dropped} dropped (the console fell behind)` : "");
          out.prepend(h("li", {}, h("code", {}, JSON.stringify(ev.rows))));
          while (out.children.length > keepRows) out.lastChild.remove();
        },
        mine.signal,
      )
      .then(() => {
        // The daemon ends a stream after limits.eventStreamLifetime, or
        // limits.eventStreamIdleTimeout without an emission: listen again.
        if (!mine.signal.aborted && !ctx.signal.aborted) start();
      })
      .catch((err) => {
        if (err.name !== "AbortError") sec.append(errorBox(err));
      })
      .finally(() => ctx.signal.removeEventListener("abort", stop));
  };
  toggle.addEventListener("click", () => {
    const pause = toggle.getAttribute("aria-pressed") === "false";
    toggle.setAttribute("aria-pressed", String(pause));
    toggle.textContent = pause ? "Resume" : "Pause";
    if (pause) {
      ctl.abort();
      info.textContent = "Paused.";
    } else start();
  });
  start();
}
