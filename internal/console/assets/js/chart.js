// A small SVG line chart of metrics history points: records in, records
// out and errors per interval.
import { h, svg } from "./ui.js";

const series = [
  { key: "recordsIn", label: "records in", cls: "s-in" },
  { key: "recordsOut", label: "records out", cls: "s-out" },
  { key: "errors", label: "errors", cls: "s-err" },
];

const W = 640;
const H = 180;
const PAD = { l: 48, r: 10, t: 10, b: 24 };

// historyChart draws {interval, points} into a figure titled title.
export function historyChart(title, hist) {
  const pts = hist.points || [];
  const fig = h("figure", { class: "chart", "data-points": String(pts.length) });
  const last = pts[pts.length - 1];
  const summary = last
    ? `${title}: last ${hist.interval} s: ${last.recordsIn} in, ${last.recordsOut} out, ${last.errors} errors`
    : `${title}: no samples yet`;
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": summary });
  root.append(svg("title", {}, summary));
  const max = Math.max(1, ...pts.flatMap((p) => series.map((s) => p[s.key])));
  const t0 = pts.length ? pts[0].time : 0;
  const t1 = pts.length ? Math.max(pts[pts.length - 1].time, t0 + 1) : 1;
  const x = (t) => PAD.l + ((t - t0) / (t1 - t0)) * (W - PAD.l - PAD.r);
  const y = (v) => H - PAD.b - (v / max) * (H - PAD.t - PAD.b);
  root.append(svg("line", { x1: PAD.l, x2: W - PAD.r, y1: y(0), y2: y(0), class: "axis" }));
  root.append(svg("line", { x1: PAD.l, x2: PAD.l, y1: PAD.t, y2: y(0), class: "axis" }));
  root.append(svg("text", { x: PAD.l - 4, y: PAD.t + 8, class: "tick", "text-anchor": "end" }, String(max)));
  root.append(svg("text", { x: PAD.l - 4, y: y(0), class: "tick", "text-anchor": "end" }, "0"));
  if (pts.length) {
    const fmt = (t) => new Date(t).toLocaleTimeString();
    root.append(svg("text", { x: PAD.l, y: H - 6, class: "tick" }, fmt(t0)));
    root.append(svg("text", { x: W - PAD.r, y: H - 6, class: "tick", "text-anchor": "end" }, fmt(t1)));
  }
  for (const s of series) {
    if (pts.length === 1) {
      root.append(svg("circle", { cx: x(pts[0].time), cy: y(pts[0][s.key]), r: 3, class: "dot " + s.cls }));
      continue;
    }
    const d = pts.map((p, i) => `${i ? "L" : "M"}${x(p.time).toFixed(1)},${y(p[s.key]).toFixed(1)}`).join("");
    if (d) root.append(svg("path", { d, class: "line " + s.cls }));
  }
  fig.append(
    h("figcaption", {}, title, " ", series.map((s) => h("span", { class: "key " + s.cls }, s.label))),
    root,
  );
  return fig;
}

// sparkline is a tiny inline chart of one series.
export function sparkline(points, key, label) {
  const vals = points.map((p) => p[key]);
  const max = Math.max(1, ...vals);
  const w = 80;
  const hh = 18;
  const d = vals.map((v, i) => `${i ? "L" : "M"}${((i / Math.max(1, vals.length - 1)) * w).toFixed(1)},${(hh - (v / max) * hh).toFixed(1)}`).join("");
  const total = vals.reduce((a, b) => a + b, 0);
  return svg(
    "svg",
    { viewBox: `0 0 ${w} ${hh}`, class: "spark", role: "img", "aria-label": `${label}: ${total} in the last hour` },
    d ? svg("path", { d, class: "line s-out" }) : "",
  );
}
