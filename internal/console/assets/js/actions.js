// The actions editor of a rule: one form per action, generated from the
// sink's property spec, or the whole list as raw JSON.
import { h, notice } from "./ui.js";
import { specFields, specForm, connectorTypes } from "./specform.js";

// actionsEditor edits a rule's actions ([{"sinkType": {props}}, ...]).
// values() returns the list or throws naming the problem.
export async function actionsEditor(initial) {
  const types = await connectorTypes("sinks");
  const items = [];
  let seq = 0;
  const list = h("div", { id: "actions-list" });
  const add = h("button", { type: "button", id: "add-action", class: "small" }, "Add action");
  const raw = h("textarea", { id: "rule-actions", rows: 8, class: "code", spellcheck: "false", hidden: true, "aria-label": "Actions as JSON" });
  const toggle = h("button", { type: "button", id: "actions-raw", class: "small link", "aria-pressed": "false", "aria-controls": "rule-actions" }, "Raw JSON");
  const formPart = h("div", {}, list, add);
  const el = h("fieldset", { class: "actions-editor" }, h("legend", {}, "Actions"), h("div", { class: "props-head" }, toggle), formPart, raw, h("small", {}, "The sinks the rule's results go to; properties come from each sink's spec."));

  async function addItem(type, props) {
    const n = seq++;
    const select = h("select", { id: `act-${n}-type`, "aria-label": `Sink type of action ${n + 1}` }, types.map((t) => h("option", { value: t }, t)));
    select.value = types.includes(type) ? type : types.includes("log") ? "log" : types[0];
    const box = h("div", {});
    const remove = h("button", { type: "button", class: "small danger", "aria-label": `Remove action ${n + 1}` }, "Remove");
    const item = { select, form: null, el: h("div", { class: "action-item", "data-action": String(n) }, h("div", { class: "actions" }, h("label", { for: select.id }, "Sink"), select, remove), box) };
    let initialProps = props;
    const load = async () => {
      const t = select.value;
      const fields = await specFields("sinks", t);
      if (select.value !== t) return;
      item.form = specForm(fields, initialProps, `act-${n}`);
      initialProps = {};
      box.replaceChildren(item.form.el);
    };
    select.addEventListener("change", () => load().catch((err) => notice(err.message, true)));
    remove.addEventListener("click", () => {
      items.splice(items.indexOf(item), 1);
      item.el.remove();
    });
    items.push(item);
    list.append(item.el);
    await load();
  }

  function formValues() {
    return items.map((it) => {
      if (!it.form) throw new Error(`the properties of sink ${it.select.value} are still loading`);
      try {
        return { [it.select.value]: it.form.values() };
      } catch (err) {
        throw new Error(`action ${it.select.value}: ${err.message}`);
      }
    });
  }

  async function setForm(actions) {
    items.length = 0;
    list.replaceChildren();
    for (const a of actions) {
      const [type, props] = Object.entries(a)[0] || ["log", {}];
      await addItem(type, props);
    }
  }

  function values() {
    if (raw.hidden) return formValues();
    let v;
    try {
      v = JSON.parse(raw.value || "[]");
    } catch (err) {
      throw new Error("Actions are not valid JSON: " + err.message);
    }
    if (!Array.isArray(v)) throw new Error("Actions must be a JSON list");
    return v;
  }

  add.addEventListener("click", () => addItem(null, {}).catch((err) => notice(err.message, true)));
  toggle.addEventListener("click", async () => {
    try {
      const v = values();
      if (raw.hidden) raw.value = JSON.stringify(v, null, 2);
      else await setForm(v);
    } catch (err) {
      notice(err.message, true);
      return;
    }
    raw.hidden = !raw.hidden;
    formPart.hidden = !raw.hidden;
    toggle.setAttribute("aria-pressed", String(!raw.hidden));
    toggle.textContent = raw.hidden ? "Raw JSON" : "Form";
  });
  await setForm(initial && initial.length ? initial : [{ log: {} }]);
  return { el, values };
}
