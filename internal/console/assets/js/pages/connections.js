// Named connections and config keys (confKeys): list, create, edit,
// delete, and "test connection" through the ping routes. Property forms
// come from the connector specs; secrets are shown as the API masks them.
import * as api from "../api.js";
import { h, table, errorBox, notice, field, confirmAction } from "../ui.js";
import { specFields, specForm, connectorTypes } from "../specform.js";

// propsPanel is a connector type picker whose property form follows the
// type chosen. kinds are the metadata kinds the types come from, in order
// of preference for the spec ("sources", "sinks").
async function propsPanel(idPrefix, kinds, type, props, opts) {
  const byKind = await Promise.all(kinds.map((k) => connectorTypes(k)));
  const all = [...new Set(byKind.flat())].sort();
  const kindOf = (t) => kinds[byKind.findIndex((l) => l.includes(t))];
  const select = h("select", { id: idPrefix + "-type" }, all.map((t) => h("option", { value: t }, t)));
  select.value = type && all.includes(type) ? type : all.includes("mqtt") ? "mqtt" : all[0];
  const box = h("div", { id: idPrefix + "-props", "aria-live": "polite" });
  let form = null;
  let initial = props;
  const load = async () => {
    const t = select.value;
    box.replaceChildren(h("p", {}, "Loading properties…"));
    const fields = await specFields(kindOf(t), t);
    if (select.value !== t) return;
    form = specForm(fields, initial, idPrefix + "-p", opts);
    initial = {}; // a type changed by the user starts from its defaults
    box.replaceChildren(h("h3", {}, `Properties of ${t}`), form.el);
  };
  select.addEventListener("change", () => load().catch((err) => box.replaceChildren(errorBox(err))));
  await load();
  return {
    select,
    box,
    type: () => select.value,
    kind: () => kindOf(select.value),
    values: () => form.values(),
  };
}

// testButton pings a connector type with the form's properties; probe
// adds what a connection does not hold (a source's datasource).
function testButton(panel, status, probe = {}) {
  const b = h("button", { type: "button", class: "test-conn" }, "Test connection");
  b.addEventListener("click", async () => {
    status.replaceChildren(h("p", {}, "Testing…"));
    try {
      await api.post(`/metadata/${panel.kind()}/connection/${encodeURIComponent(panel.type())}`, { ...(panel.kind() === "sources" ? probe : {}), ...panel.values() });
      status.replaceChildren(h("p", { class: "ok test-result", role: "status" }, `Connected: the ${panel.type()} ${panel.kind().slice(0, -1)} accepts these properties.`));
    } catch (err) {
      status.replaceChildren(h("p", { class: "error test-result", role: "alert" }, err.message));
    }
  });
  return b;
}

// probeSource is the datasource a connection is tested with as a source:
// the test only connects, it reads nothing.
const probeSource = { datasource: "rekuiper/connection-test" };

const maskedHint = "Secrets show as ****** (as the API gives them); leave them so to keep the stored value. Test connection needs secrets typed again.";

export async function connections(ctx, editID) {
  const list = h("section", { "aria-labelledby": "conn-list-h" });
  const old = editID ? await api.get(`/connections/${encodeURIComponent(editID)}`) : null;
  const idInput = h("input", { id: "conn-id", required: true, autocomplete: "off", value: editID || "" });
  if (editID) idInput.readOnly = true;
  const panel = await propsPanel("conn", ["sources", "sinks"], old && old.typ, old && old.props, { optional: true });
  const status = h("div", {});
  const form = h(
    "form",
    { id: "conn-form", "aria-labelledby": "conn-form-h" },
    h("h2", { id: "conn-form-h" }, editID ? `Edit connection ${editID}` : "New connection"),
    field("ID", idInput, "Rules and streams select it with connectionSelector."),
    field("Type", panel.select),
    panel.box,
    h("small", {}, maskedHint),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save"), testButton(panel, status, probeSource), editID ? h("a", { href: "#/connections" }, "Cancel") : null),
    status,
  );
  ctx.main.replaceChildren(h("h1", {}, "Connections"), h("p", {}, h("a", { href: "#/confkeys" }, "Config keys"), " hold connector properties streams and actions refer to by name."), list, form);

  const refresh = async () => {
    const conns = await api.get("/connections");
    const rows = conns.map((c) => {
      const drop = h("button", { type: "button", class: "small danger", "aria-label": `Delete connection ${c.id}` }, "Delete");
      drop.addEventListener("click", async () => {
        if (!confirmAction(`Delete connection ${c.id}?`)) return;
        try {
          notice(await api.del(`/connections/${encodeURIComponent(c.id)}`));
          refresh();
        } catch (err) {
          notice(err.message, true);
        }
      });
      return h(
        "tr",
        { "data-id": c.id },
        h("td", {}, c.id),
        h("td", {}, c.typ),
        h("td", {}, c.status, c.err ? h("span", { class: "error" }, " ", c.err) : null),
        h("td", {}, h("code", {}, JSON.stringify(c.props))),
        h("td", {}, (c.ruleRefs || []).join(", ")),
        h("td", { class: "actions" }, h("a", { href: `#/connections/${encodeURIComponent(c.id)}/edit`, class: "button small", "aria-label": `Edit connection ${c.id}` }, "Edit"), drop),
      );
    });
    list.replaceChildren(h("h2", { id: "conn-list-h" }, "Named connections"), table("Connections", ["ID", "Type", "State", "Properties", "Used by", "Actions"], rows));
  };

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    status.replaceChildren();
    try {
      const body = { id: idInput.value.trim(), typ: panel.type(), props: panel.values() };
      notice(editID ? await api.put(`/connections/${encodeURIComponent(editID)}`, body) : await api.post("/connections", body));
      if (editID) ctx.go("#/connections");
      else refresh();
    } catch (err) {
      status.replaceChildren(errorBox(err));
    }
  });
  await refresh();
}

// confKeys lists and edits the config keys of one category and type.
export async function confKeys(ctx) {
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const kindSel = h("select", { id: "ck-kind" }, h("option", { value: "sources" }, "sources"), h("option", { value: "sinks" }, "sinks"));
  kindSel.value = params.get("kind") === "sinks" ? "sinks" : "sources";
  const list = h("section", { "aria-labelledby": "ck-list-h" });
  const editor = h("section", { "aria-labelledby": "ck-form-h" });
  ctx.main.replaceChildren(h("h1", {}, "Config keys"), field("Category", kindSel), h("div", { id: "ck-body" }), list, editor);

  const render = async (key, props) => {
    const panel = await propsPanel("ck", [kindSel.value], params.get("type"), props);
    const keyInput = h("input", { id: "ck-key", required: true, autocomplete: "off", value: key || "" });
    const status = h("div", {});
    const form = h(
      "form",
      { id: "ck-form" },
      h("h2", { id: "ck-form-h" }, key ? `Edit ${kindSel.value} key ${key}` : "New or replaced key"),
      field("Type", panel.select),
      field("Key", keyInput, "The name streams give in CONF_KEY and actions in resourceId."),
      panel.box,
      h("small", {}, maskedHint),
      h("div", { class: "actions" }, h("button", { type: "submit" }, "Save"), testButton(panel, status)),
      status,
    );
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      status.replaceChildren();
      try {
        const t = panel.type();
        await api.put(`/metadata/${kindSel.value}/${encodeURIComponent(t)}/confKeys/${encodeURIComponent(keyInput.value.trim())}`, panel.values());
        notice(`Saved ${kindSel.value} key ${t}/${keyInput.value.trim()}.`);
        params.set("type", t);
        await showKeys();
      } catch (err) {
        status.replaceChildren(errorBox(err));
      }
    });
    panel.select.addEventListener("change", () => {
      params.set("type", panel.select.value);
      showKeys().catch((err) => notice(err.message, true));
    });
    editor.replaceChildren(form);
    return panel;
  };

  const showKeys = async () => {
    const kind = kindSel.value;
    const type = params.get("type") || (await connectorTypes(kind)).find((t) => t === "mqtt") || (await connectorTypes(kind))[0];
    params.set("type", type);
    const keys = await api.get(`/metadata/${kind}/yaml/${encodeURIComponent(type)}`);
    const rows = Object.entries(keys).map(([k, props]) => {
      const edit = h("button", { type: "button", class: "small", "aria-label": `Edit key ${k}` }, "Edit");
      edit.addEventListener("click", () => render(k, props).catch((err) => notice(err.message, true)));
      const drop = h("button", { type: "button", class: "small danger", "aria-label": `Delete key ${k}` }, "Delete");
      drop.addEventListener("click", async () => {
        if (!confirmAction(`Delete ${kind} key ${type}/${k}?`)) return;
        try {
          await api.del(`/metadata/${kind}/${encodeURIComponent(type)}/confKeys/${encodeURIComponent(k)}`);
          notice(`Deleted ${kind} key ${type}/${k}.`);
          showKeys();
        } catch (err) {
          notice(err.message, true);
        }
      });
      return h("tr", { "data-key": k }, h("td", {}, k), h("td", {}, h("code", {}, JSON.stringify(props))), h("td", { class: "actions" }, edit, drop));
    });
    list.replaceChildren(h("h2", { id: "ck-list-h" }, `Keys of ${kind} type ${type}`), table(`${kind}/${type}`, ["Key", "Properties", "Actions"], rows));
  };
  kindSel.addEventListener("change", async () => {
    params.delete("type");
    try {
      await showKeys();
      await render(null, null);
    } catch (err) {
      notice(err.message, true);
    }
  });
  await showKeys();
  await render(null, null);
}
