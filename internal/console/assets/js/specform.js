// Forms generated from a connector's property spec (the field lists of
// GET /metadata/sources/{type} and /metadata/sinks/{type}): one labelled
// input per property, typed by the spec, with a "Raw JSON" switch that
// edits the same properties as text.
import * as api from "./api.js";
import { h, notice } from "./ui.js";

const specs = new Map(); // "sinks/mqtt" → promise of the field list

// specFields fetches (once per page load) the fields of a connector type;
// kind is "sources" or "sinks".
export function specFields(kind, type) {
  const key = kind + "/" + type;
  if (!specs.has(key)) {
    const p = api.get(`/metadata/${kind}/${encodeURIComponent(type)}`).then((m) => (Array.isArray(m.properties) ? m.properties : m.properties.default || []));
    p.catch(() => specs.delete(key));
    specs.set(key, p);
  }
  return specs.get(key);
}

// connectorTypes lists the connector types of a kind by name.
export async function connectorTypes(kind) {
  return (await api.get(`/metadata/${kind}`)).map((c) => c.name).sort();
}

function hintOf(f) {
  return (f.hint && f.hint.en) || "";
}

// input builds the control of one field, set to v (undefined: the default).
function input(f, id, v) {
  const shown = v === undefined ? f.default : v;
  // A bool is a choice of three: true, false, or unset (some connectors
  // tell unset from false).
  const choices = Array.isArray(f.values) ? f.values : f.type === "bool" ? [true, false] : null;
  let el;
  if (choices) {
    el = h("select", { id, "data-prop": f.name }, f.optional || f.default == null ? h("option", { value: "" }, "(unset)") : null, choices.map((x) => h("option", { value: JSON.stringify(x) }, x === "" ? "(none)" : String(x))));
    el.value = shown == null ? "" : JSON.stringify(shown);
  } else if (f.type === "object" || f.type === "list_object") {
    el = h("textarea", { id, rows: 3, class: "code", spellcheck: "false", "data-prop": f.name });
    el.value = shown == null ? "" : JSON.stringify(shown, null, 2);
  } else {
    el = h("input", { id, type: f.control === "password" ? "password" : "text", autocomplete: "off", spellcheck: "false", "data-prop": f.name });
    if (f.type === "int" || f.type === "float") el.inputMode = "decimal";
    el.value = shown == null ? "" : typeof shown === "object" ? JSON.stringify(shown) : String(shown);
  }
  return el;
}

// read returns the value of a field's control, or undefined when empty.
function read(f, el) {
  if (el.tagName === "SELECT") return el.value === "" ? undefined : JSON.parse(el.value);
  const s = el.value.trim();
  if (s === "") return undefined;
  if (el.tagName === "TEXTAREA") {
    try {
      return JSON.parse(s);
    } catch (err) {
      throw new Error(`${f.name}: not valid JSON (${err.message})`);
    }
  }
  if (f.type === "int" || f.type === "float") {
    const n = Number(s);
    // Durations are typed int but also take "5s": keep text that is not a number.
    return isFinite(n) ? n : s;
  }
  return s;
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// specForm is a form for the properties of one connector: fields are the
// spec's, initial the properties to edit (secrets as the API masks them:
// sent back unchanged, the daemon keeps the stored value). values()
// returns the properties: those the user set or that were there already,
// leaving a default untouched out, and the initial ones the spec does not
// name. It throws naming the field when a value is not valid or a
// required one is missing (unless opts.optional: a named connection holds
// only part of a connector's properties).
export function specForm(fields, initial, idPrefix, opts = {}) {
  initial = initial || {};
  const controls = [];
  const form = h("div", { class: "spec-form" });
  let raw = null;
  for (const f of fields) {
    const id = `${idPrefix}-${f.name}`;
    const el = input(f, id, initial[f.name]);
    if (!f.optional && !opts.optional) el.setAttribute("aria-required", "true");
    controls.push([f, el]);
    const hint = hintOf(f);
    const label = h("label", { for: id }, f.name, f.optional || opts.optional ? "" : " *");
    if (hint) el.setAttribute("aria-describedby", id + "-hint");
    form.append(h("div", { class: "field" }, label, el, hint ? h("small", { id: id + "-hint" }, hint) : null));
  }
  const known = new Set(fields.map((f) => f.name));
  const extra = Object.fromEntries(Object.entries(initial).filter(([k]) => !known.has(k)));
  const rawArea = h("textarea", { id: idPrefix + "-raw", rows: 6, class: "code", spellcheck: "false", hidden: true, "aria-label": "Properties as JSON" });
  const toggle = h("button", { type: "button", class: "small link", "aria-pressed": "false", "aria-controls": idPrefix + "-raw" }, "Raw JSON");
  const el = h("div", { class: "props" }, h("div", { class: "props-head" }, toggle), form, rawArea);

  function formValues() {
    const out = { ...extra };
    for (const [f, c] of controls) {
      const v = read(f, c);
      if (v === undefined || (!(f.name in initial) && same(v, f.default))) continue;
      out[f.name] = v;
    }
    for (const [f] of controls) {
      if (!f.optional && !opts.optional && f.default == null && out[f.name] === undefined) throw new Error(`${f.name} is required`);
    }
    return out;
  }
  function values() {
    if (!raw) return formValues();
    try {
      const v = JSON.parse(rawArea.value || "{}");
      if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error("an object is expected");
      return v;
    } catch (err) {
      throw new Error(`properties: not valid JSON (${err.message})`);
    }
  }
  toggle.addEventListener("click", () => {
    if (!raw) {
      let v;
      try {
        v = { ...extra };
        for (const [f, c] of controls) {
          const x = read(f, c);
          if (x !== undefined && (f.name in initial || !same(x, f.default))) v[f.name] = x;
        }
      } catch {
        v = initial;
      }
      rawArea.value = JSON.stringify(v, null, 2);
      raw = true;
    } else {
      // Back to the form: the JSON becomes the form's values.
      let v;
      try {
        v = values();
      } catch (err) {
        notice(err.message, true);
        return;
      }
      for (const [f, c] of controls) {
        const x = v[f.name] === undefined ? f.default : v[f.name];
        if (c.tagName === "SELECT") c.value = x == null ? "" : JSON.stringify(x);
        else if (c.tagName === "TEXTAREA") c.value = x == null ? "" : JSON.stringify(x, null, 2);
        else c.value = x == null ? "" : typeof x === "object" ? JSON.stringify(x) : String(x);
      }
      for (const k of Object.keys(extra)) delete extra[k];
      for (const [k, x] of Object.entries(v)) if (!known.has(k)) extra[k] = x;
      Object.assign(initial, Object.fromEntries(Object.keys(v).map((k) => [k, v[k]])));
      raw = null;
    }
    form.hidden = !!raw;
    rawArea.hidden = !raw;
    toggle.setAttribute("aria-pressed", String(!!raw));
    toggle.textContent = raw ? "Form" : "Raw JSON";
  });
  return { el, values };
}
