// The topology of a running rule (GET /rules/{id}/topo) drawn as a layered
// SVG graph, each node with its live counters from the rule's status.
import { h, svg } from "./ui.js";

const NW = 170;
const NH = 46;
const GX = 60;
const GY = 16;

// layers places every node in the layer of its longest path from a source.
function layers(topo) {
  const edges = topo.edges || {};
  const depth = new Map();
  const visit = (n, d, seen) => {
    if (seen.has(n)) return; // a cycle cannot happen; guard anyway
    if ((depth.get(n) ?? -1) >= d) return;
    depth.set(n, d);
    const next = new Set(seen).add(n);
    for (const m of edges[n] || []) visit(m, d + 1, next);
  };
  for (const s of topo.sources || []) visit(s, 0, new Set());
  const cols = [];
  for (const [n, d] of depth) (cols[d] ||= []).push(n);
  return { cols, edges };
}

// counters reads a node's records in/out from the status metrics: source
// "source_demo" has source_demo_0_records_in_total, etc.
function counters(name, status) {
  const p = name + "_0_";
  return {
    in: status[p + "records_in_total"] ?? 0,
    out: status[p + "records_out_total"] ?? 0,
    err: status[p + "exceptions_total"] ?? 0,
  };
}

export function topoGraph(topo, status) {
  const { cols, edges } = layers(topo);
  const rows = Math.max(1, ...cols.map((c) => c.length));
  const width = cols.length * (NW + GX) - GX + 20;
  const height = rows * (NH + GY) - GY + 20;
  const pos = new Map();
  cols.forEach((col, i) =>
    col.forEach((n, j) => {
      const off = ((rows - col.length) * (NH + GY)) / 2;
      pos.set(n, { x: 10 + i * (NW + GX), y: 10 + off + j * (NH + GY) });
    }),
  );
  const root = svg("svg", {
    viewBox: `0 0 ${width} ${height}`,
    class: "dag",
    role: "img",
    "aria-label": `rule topology: ${[...pos.keys()].join(", ")}`,
  });
  root.append(
    svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 8 8", refX: 8, refY: 4, markerWidth: 8, markerHeight: 8, orient: "auto" }, svg("path", { d: "M0,0L8,4L0,8z", class: "arrowhead" }))),
  );
  for (const [from, tos] of Object.entries(edges)) {
    const a = pos.get(from);
    for (const to of tos) {
      const b = pos.get(to);
      if (!a || !b) continue;
      const x1 = a.x + NW;
      const y1 = a.y + NH / 2;
      const x2 = b.x;
      const y2 = b.y + NH / 2;
      const mx = (x1 + x2) / 2;
      root.append(svg("path", { d: `M${x1},${y1}C${mx},${y1} ${mx},${y2} ${x2},${y2}`, class: "edge", "marker-end": "url(#arrow)" }));
    }
  }
  for (const [n, p] of pos) {
    const c = counters(n, status || {});
    const g = svg("g", { class: "node" + (c.err ? " failing" : ""), transform: `translate(${p.x},${p.y})`, "data-node": n });
    g.append(
      svg("rect", { width: NW, height: NH, rx: 6 }),
      svg("text", { x: 8, y: 18, class: "node-name" }, n),
      svg("text", { x: 8, y: 36, class: "node-count" }, `in ${c.in} · out ${c.out}${c.err ? " · err " + c.err : ""}`),
    );
    root.append(g);
  }
  return h("div", { class: "dag-wrap" }, root);
}
