// Overview: the node, its rules by state, its activity over the last hour
// and the state of every source and sink connection.
import * as api from "../api.js";
import { h, table, bytes, duration, stateBadge } from "../ui.js";
import { historyChart } from "../chart.js";

const connText = { 1: "connected", 0: "connecting", "-1": "disconnected" };

export async function overview(ctx) {
  const node = h("section", { "aria-labelledby": "node-h" });
  const ruleSec = h("section", { "aria-labelledby": "rules-h" });
  const chart = h("section", { "aria-labelledby": "act-h" });
  const conns = h("section", { "aria-labelledby": "conn-h" });
  ctx.main.replaceChildren(h("h1", {}, "Overview"), node, ruleSec, chart, conns);

  const refresh = async () => {
    const [info, list, hist] = await Promise.all([api.get("/"), api.get("/rules"), api.get("/metrics/history").catch(() => null)]);
    node.replaceChildren(
      h("h2", { id: "node-h" }, "Node"),
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "Version"), h("dd", { id: "version" }, info.version),
        h("dt", {}, "Uptime"), h("dd", {}, duration(info.upTimeSeconds)),
        h("dt", {}, "CPU"), h("dd", {}, info.cpuUsage ?? "–"),
        h("dt", {}, "Memory"), h("dd", {}, info.memoryUsed ? `${bytes(info.memoryUsed)} of ${bytes(info.memoryTotal)}` : "–"),
        h("dt", {}, "Platform"), h("dd", {}, `${info.os}/${info.arch}`),
      ),
      (info.warnings || []).map((w) => h("p", { class: "warning" }, w)),
    );
    const byState = {};
    for (const r of list) byState[r.status] = (byState[r.status] || 0) + 1;
    ruleSec.replaceChildren(
      h("h2", { id: "rules-h" }, "Rules"),
      h("ul", { class: "counts" }, Object.keys(byState).length ? Object.entries(byState).map(([s, n]) => h("li", {}, stateBadge(s), " ", String(n))) : h("li", {}, "No rules yet. ", h("a", { href: "#/rules/new" }, "Create one."))),
    );
    chart.replaceChildren(h("h2", { id: "act-h" }, "Activity, last hour"), hist ? historyChart("All rules", hist) : h("p", {}, "Metrics history is not available."));
    conns.replaceChildren(h("h2", { id: "conn-h" }, "Connections"), await connections(list));
  };
  await refresh();
  ctx.every(5000, () => refresh().catch(() => {}));
}

// connections lists the connection state of every source and sink of the
// running rules (from their status), then the named connections.
async function connections(list) {
  const running = list.filter((r) => r.status === "running").slice(0, 50);
  const statuses = await Promise.all(running.map((r) => api.get(`/v2/rules/${encodeURIComponent(r.id)}/status`).catch(() => ({}))));
  const rows = [];
  running.forEach((r, i) => {
    for (const [k, v] of Object.entries(statuses[i])) {
      const m = /^(source|sink)_(.+)_0_connection_status$/.exec(k);
      if (!m) continue;
      const msg = statuses[i][`${m[1]}_${m[2]}_0_connection_last_disconnected_message`];
      rows.push(h("tr", {}, h("td", {}, h("a", { href: `#/rules/${encodeURIComponent(r.id)}` }, r.id)), h("td", {}, m[1]), h("td", {}, m[2]), h("td", { class: v === 1 ? "ok" : "bad" }, connText[v] || String(v)), h("td", {}, msg || "")));
    }
  });
  const named = await api.get("/connections").catch(() => []);
  const namedRows = named.map((c) => h("tr", {}, h("td", {}, c.id), h("td", {}, c.typ), h("td", {}, c.status), h("td", {}, String(c.refCount)), h("td", {}, c.err || "")));
  return h(
    "div",
    {},
    table("Sources and sinks of running rules", ["Rule", "Kind", "Name", "State", "Last error"], rows),
    table("Named connections", ["Name", "Type", "State", "Users", "Last error"], namedRows),
  );
}
