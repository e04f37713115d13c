// SQL highlighting and completion for the editor: a tokenizer good enough
// to colour keywords, strings, numbers, comments and function calls in an
// overlay under a transparent textarea, and a completion list of streams,
// fields, functions and keywords.
import { h } from "./ui.js";

const keywords = new Set(
  ("select from where group by having order asc desc limit as and or not in is null true false case when then else end " +
    "inner left right full cross join on over partition filter create stream table with distinct like between except " +
    "tumblingwindow hoppingwindow slidingwindow sessionwindow countwindow eventtimewindow bigint float string datetime boolean array struct bytea")
    .split(" "),
);

export const sqlKeywords = [...keywords];

const tokenRE = /(--[^\n]*|\/\*[\s\S]*?(?:\*\/|$))|("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?)|(`[^`]*`?)|(\b\d+(?:\.\d+)?\b)|([A-Za-z_][A-Za-z0-9_]*)(?=(\s*\()|)/g;

// highlight returns the nodes of sql with its tokens in spans.
export function highlight(sql) {
  const out = [];
  let last = 0;
  for (const m of sql.matchAll(tokenRE)) {
    if (m.index > last) out.push(sql.slice(last, m.index));
    last = m.index + m[0].length;
    let cls = "";
    if (m[1]) cls = "t-comment";
    else if (m[2]) cls = "t-string";
    else if (m[3]) cls = "t-ident";
    else if (m[4]) cls = "t-number";
    else if (m[5] && keywords.has(m[5].toLowerCase())) cls = "t-keyword";
    else if (m[5] && m[6]) cls = "t-func";
    out.push(cls ? h("span", { class: cls }, m[0]) : m[0]);
  }
  out.push(sql.slice(last) + "\n"); // a final newline keeps the last line's height
  return out;
}

// completer attaches a completion list to area; words() resolves to the
// candidates [{label, kind}] (called as the user types, may be cached).
export function completer(area, words) {
  const id = area.id + "-complete";
  const list = h("ul", { id, class: "complete", role: "listbox", hidden: true, "aria-label": "Completions" });
  area.setAttribute("aria-autocomplete", "list");
  area.setAttribute("aria-controls", id);
  let items = [];
  let active = 0;
  let word = null;

  const close = () => {
    list.hidden = true;
    items = [];
    area.removeAttribute("aria-activedescendant");
  };
  const mark = () => {
    [...list.children].forEach((li, i) => li.setAttribute("aria-selected", String(i === active)));
    if (items.length) area.setAttribute("aria-activedescendant", `${id}-${active}`);
  };
  const accept = (i) => {
    const c = items[i];
    if (!c || !word) return;
    const v = area.value;
    area.value = v.slice(0, word.start) + c.label + v.slice(word.end);
    const pos = word.start + c.label.length;
    area.setSelectionRange(pos, pos);
    close();
    area.dispatchEvent(new Event("input", { bubbles: true }));
  };
  area.addEventListener("input", async () => {
    const pos = area.selectionStart;
    const m = /[A-Za-z_][A-Za-z0-9_]*$/.exec(area.value.slice(0, pos));
    if (!m) return close();
    const end = pos + (/^[A-Za-z0-9_]*/.exec(area.value.slice(pos))[0].length);
    word = { start: m.index, end, text: m[0] };
    const all = await words().catch(() => []);
    const p = word.text.toLowerCase();
    items = all.filter((c) => c.label.toLowerCase().startsWith(p) && c.label.toLowerCase() !== p).slice(0, 12);
    if (!items.length) return close();
    active = 0;
    list.replaceChildren(
      ...items.map((c, i) => {
        const li = h("li", { id: `${id}-${i}`, role: "option", "data-label": c.label }, c.label, h("small", {}, " ", c.kind));
        li.addEventListener("mousedown", (e) => {
          e.preventDefault();
          accept(i);
        });
        return li;
      }),
    );
    list.hidden = false;
    mark();
  });
  area.addEventListener("keydown", (e) => {
    if (list.hidden) return;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      active = (active + (e.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
      mark();
    } else if (e.key === "Enter" || e.key === "Tab") accept(active);
    else if (e.key === "Escape") close();
    else return;
    e.preventDefault();
  });
  area.addEventListener("blur", close);
  return list;
}
