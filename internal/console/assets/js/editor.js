// An SQL text area that marks an error at the line and column the API
// names: the caret moves there and the line is shown with a marker under
// the column.
import { h } from "./ui.js";
import { highlight, completer } from "./sqlhl.js";

// sqlEditor is the text area with its highlighting overlay; words, when
// given, resolves to the completion candidates.
export function sqlEditor(id, label, value, rows = 6, words = null) {
  const area = h("textarea", { id, rows, spellcheck: "false", autocomplete: "off", class: "code", "aria-describedby": id + "-err" });
  area.value = value || "";
  const hl = h("pre", { class: "hl", id: id + "-hl", "aria-hidden": "true" });
  const paint = () => {
    hl.replaceChildren(...highlight(area.value));
    hl.scrollTop = area.scrollTop;
  };
  paint();
  area.addEventListener("scroll", () => (hl.scrollTop = area.scrollTop));
  const wrap = h("div", { class: "code-wrap" }, hl, area, words ? completer(area, words) : null);
  const mark = h("div", { id: id + "-err", class: "sql-mark", "aria-live": "polite" });
  const el = h("div", { class: "field" }, h("label", { for: id }, label), wrap, mark);
  area.addEventListener("input", () => {
    clear();
    paint();
  });
  function clear() {
    mark.replaceChildren();
    area.removeAttribute("aria-invalid");
    area.removeAttribute("data-valid");
  }
  // show marks err; it reports whether err named a position in the text.
  // With move, the caret goes to the position (not while the user types).
  function show(err, move = true) {
    clear();
    const pos = err.pos;
    const lines = area.value.split("\n");
    if (!pos || pos.line > lines.length) return false;
    const line = lines[pos.line - 1];
    const col = Math.max(1, Math.min(pos.col, line.length + 1));
    let offset = col - 1;
    for (let i = 0; i < pos.line - 1; i++) offset += lines[i].length + 1;
    area.setAttribute("aria-invalid", "true");
    if (move) {
      area.focus();
      area.setSelectionRange(offset, Math.min(offset + 1, area.value.length));
    }
    mark.append(
      h("p", { class: "sql-error", role: "alert", "data-line": String(pos.line), "data-col": String(pos.col) }, `Line ${pos.line}, column ${pos.col}: ${err.message}`),
      h("pre", { class: "sql-line", "aria-hidden": "true" }, line + "\n" + " ".repeat(col - 1) + "^"),
    );
    return true;
  }
  return { el, area, show, clear };
}
