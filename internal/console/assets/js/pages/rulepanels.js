// The checkpoint and sink cache panels of a rule's page, read from the
// figures of GET /v2/rules/{id}/status.
import { h, bytes, when } from "../ui.js";

function facts(id, pairs) {
  return h("dl", { class: "facts", id }, pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", { "data-fact": k }, v)]));
}

// checkpointPanel shows the last completed checkpoint.
export function checkpointPanel(st) {
  if (st.checkpoint_completed_total === undefined) {
    return h("p", { id: "checkpoints" }, st.status === "running" ? "Checkpointing is off for this rule (options.qos 0)." : "Shown while the rule runs.");
  }
  const done = st.checkpoint_completed_total > 0;
  return facts("checkpoints", [
    ["Last completed", done ? `#${st.checkpoint_last_id} at ${when(st.checkpoint_last_time)}` : "none yet"],
    ["Duration", done ? `${st.checkpoint_last_duration_ms} ms` : "–"],
    ["Size", done ? bytes(st.checkpoint_last_size_bytes) : "–"],
    ["Completed", String(st.checkpoint_completed_total)],
    ["Abandoned", String(st.checkpoint_abandoned_total)],
    ["Last error", st.checkpoint_last_error || "none"],
  ]);
}

const cacheKey = /^sink_(.+)_0_cache_length$/;

// cachePanel shows the depth of each sink's cache and what it resent.
export function cachePanel(st) {
  const sinks = Object.keys(st)
    .map((k) => cacheKey.exec(k))
    .filter(Boolean)
    .map((m) => m[1])
    .sort();
  if (!sinks.length) {
    return h("p", { id: "sink-cache" }, st.status === "running" ? "No action of this rule has its cache on (enableCache)." : "Shown while the rule runs.");
  }
  const cols = [
    ["In memory", "cache_memory_length"],
    ["On disk", "cache_disk_length"],
    ["Disk bytes", "cache_disk_bytes", bytes],
    ["Resent", "cache_records_replayed_total"],
    ["Cached", "cache_records_cached_total"],
    ["Dropped", "cache_records_dropped_total"],
    ["Oldest, ms", "cache_oldest_age_ms"],
  ];
  const rows = sinks.map((s) => {
    const p = `sink_${s}_0_`;
    const err = st[p + "cache_disk_error"];
    return h(
      "tr",
      { "data-sink": s },
      h("th", { scope: "row" }, s),
      cols.map(([, k, f]) => h("td", { "data-col": k }, f ? f(st[p + k]) : String(st[p + k] ?? "–"))),
      h("td", { class: err ? "bad" : "" }, err || "none"),
    );
  });
  return h(
    "table",
    { id: "sink-cache" },
    h("caption", {}, "Records held for the sink while it cannot take them"),
    h("thead", {}, h("tr", {}, ["Sink", ...cols.map((c) => c[0]), "Disk error"].map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, rows),
  );
}
