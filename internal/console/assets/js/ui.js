// Small DOM helpers: elements are built with textContent, never from HTML
// strings, so no value from the API is ever parsed as markup.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// svg builds an SVG element.
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  append(el, children);
  return el;
}

// notice shows a message in the live region screen readers announce.
export function notice(text, isError) {
  const el = document.getElementById("notice");
  el.textContent = text;
  el.className = isError ? "notice error" : "notice";
}

// errorBox renders an API error under a form.
export function errorBox(err) {
  return h("p", { class: "error", role: "alert" }, err.message || String(err));
}

export function field(label, input, hint) {
  const id = input.id || "f-" + Math.random().toString(36).slice(2);
  input.id = id;
  return h("div", { class: "field" }, h("label", { for: id }, label), input, hint ? h("small", {}, hint) : null);
}

export function table(caption, headers, rows) {
  return h(
    "table",
    {},
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: headers.length }, "None yet."))),
  );
}

export function stateBadge(status) {
  const cls = status === "running" ? "ok" : status.startsWith("stopped by") ? "bad" : "idle";
  return h("span", { class: "badge " + cls }, status);
}

export function bytes(n) {
  const v = Number(n);
  if (!isFinite(v)) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  let x = v;
  while (x >= 1024 && i < units.length - 1) {
    x /= 1024;
    i++;
  }
  return x.toFixed(i ? 1 : 0) + " " + units[i];
}

export function duration(s) {
  const d = Math.floor(s / 86400);
  const hh = Math.floor((s % 86400) / 3600);
  const mm = Math.floor((s % 3600) / 60);
  return (d ? d + "d " : "") + (d || hh ? hh + "h " : "") + mm + "m " + (s % 60) + "s";
}

export function when(ms) {
  return ms ? new Date(ms).toLocaleString() : "–";
}

// confirmAction asks before a destructive action.
export function confirmAction(text) {
  return window.confirm(text);
}
