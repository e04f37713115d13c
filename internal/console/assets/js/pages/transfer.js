// Import and export of the node's streams, tables, rules, confKeys and
// JavaScript functions (GET /data/export, POST /data/import).
import * as api from "../api.js";
import { h, errorBox, notice, field } from "../ui.js";

export async function transfer(ctx) {
  const exported = h("textarea", { id: "export-text", rows: 10, class: "code", readonly: true });
  const download = h("a", { id: "export-download", download: "rekuiper-export.json", hidden: true }, "Download the export");
  const exportBtn = h("button", { type: "button" }, "Export");
  exportBtn.addEventListener("click", async () => {
    const data = await api.get("/data/export").catch((err) => notice(err.message, true));
    if (!data) return;
    exported.value = JSON.stringify(data, null, 2);
    if (download.href) URL.revokeObjectURL(download.href);
    download.href = URL.createObjectURL(new Blob([exported.value], { type: "application/json" }));
    download.hidden = false;
  });
  ctx.signal.addEventListener("abort", () => download.href && URL.revokeObjectURL(download.href));

  const content = h("textarea", { id: "import-text", rows: 10, class: "code", spellcheck: "false" });
  const file = h("input", { type: "file", id: "import-file", accept: "application/json,.json" });
  file.addEventListener("change", async () => {
    if (file.files[0]) content.value = await file.files[0].text();
  });
  const partial = h("input", { type: "checkbox", id: "import-partial" });
  const status = h("div", {});
  const form = h(
    "form",
    { id: "import-form" },
    field("Import file", file),
    field("Or paste an export", content),
    h("div", { class: "field inline" }, partial, h("label", { for: "import-partial" }, "Partial: add to what exists instead of replacing everything")),
    h("button", { type: "submit" }, "Import"),
    status,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    status.replaceChildren();
    if (!partial.checked && !window.confirm("A full import replaces every rule, stream, table and confKey. Continue?")) return;
    try {
      await api.post("/data/import" + (partial.checked ? "?partial=1" : ""), { content: content.value });
      notice("Imported.");
    } catch (err) {
      status.replaceChildren(errorBox(err));
    }
  });
  ctx.main.replaceChildren(
    h("h1", {}, "Import and export"),
    h("section", { "aria-labelledby": "exp-h" }, h("h2", { id: "exp-h" }, "Export"), exportBtn, " ", download, field("Export", exported)),
    h("section", { "aria-labelledby": "imp-h" }, h("h2", { id: "imp-h" }, "Import"), form),
  );
}
