// The console's shell: hash routes, sign-in when the API asks for a token,
// and the life of each page (its timers and streams end when the user
// leaves it).
import * as api from "./api.js";
import { h, errorBox } from "./ui.js";
import { overview } from "./pages/overview.js";
import { streams } from "./pages/streams.js";
import { rules, ruleForm } from "./pages/rules.js";
import { rulePage } from "./pages/rule.js";
import { transfer } from "./pages/transfer.js";
import { ruleTest } from "./pages/ruletest.js";
import { connections, confKeys } from "./pages/connections.js";

const routes = [
  [/^\/?$/, "overview", overview],
  [/^\/streams$/, "streams", streams],
  [/^\/rules$/, "rules", rules],
  [/^\/rules\/new$/, "rules", (ctx) => ruleForm(ctx, null)],
  [/^\/rules\/([^/]+)\/edit$/, "rules", (ctx, id) => ruleForm(ctx, decodeURIComponent(id))],
  [/^\/rules\/([^/]+)$/, "rules", (ctx, id) => rulePage(ctx, decodeURIComponent(id))],
  [/^\/ruletest$/, "ruletest", ruleTest],
  [/^\/connections$/, "connections", (ctx) => connections(ctx, null)],
  [/^\/connections\/([^/]+)\/edit$/, "connections", (ctx, id) => connections(ctx, decodeURIComponent(id))],
  [/^\/confkeys(?:\?.*)?$/, "connections", confKeys],
  [/^\/transfer$/, "transfer", transfer],
];

let current = null; // AbortController of the page shown

// pageContext is what a page gets: where to draw, a signal that ends with
// the page, and every(ms, f) for periodic refreshes bound to it.
function pageContext(main, ctl) {
  return {
    main,
    signal: ctl.signal,
    every(ms, f) {
      const id = setInterval(() => {
        if (!document.hidden) f();
      }, ms);
      ctl.signal.addEventListener("abort", () => clearInterval(id));
    },
    go(hash) {
      location.hash = hash;
    },
  };
}

async function show() {
  if (current) current.abort();
  const ctl = new AbortController();
  current = ctl;
  const main = document.getElementById("main");
  const path = location.hash.replace(/^#/, "") || "/";
  for (const [re, nav, page] of routes) {
    const m = re.exec(path);
    if (!m) continue;
    for (const a of document.querySelectorAll("nav a")) {
      if (a.dataset.nav === nav) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    main.replaceChildren(h("p", {}, "Loading…"));
    try {
      await page(pageContext(main, ctl), ...m.slice(1));
    } catch (err) {
      if (ctl.signal.aborted || err.status === 401) return;
      main.replaceChildren(h("h1", {}, "Error"), errorBox(err));
    }
    const h1 = main.querySelector("h1");
    if (h1 && !ctl.signal.aborted && !main.contains(document.activeElement)) {
      h1.tabIndex = -1;
      h1.focus({ preventScroll: true });
    }
    return;
  }
  main.replaceChildren(h("h1", {}, "Not found"), h("p", {}, "No page at ", path, ". ", h("a", { href: "#/" }, "Go to the overview.")));
}

// signIn replaces the page by the token form; a token that works shows
// the page the user asked for.
function signIn(reason) {
  if (current) current.abort();
  current = null;
  const main = document.getElementById("main");
  const input = h("textarea", { id: "token", rows: 4, required: true, autocomplete: "off", spellcheck: "false" });
  const status = h("div", {});
  const form = h(
    "form",
    { class: "signin" },
    h("div", { class: "field" }, h("label", { for: "token" }, "Token"), input, h("small", {}, "A JWT signed by a key in etc/mgmt, e.g. from kuiper token. It is kept in this tab only.")),
    h("button", { type: "submit" }, "Sign in"),
    status,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    api.setToken(input.value);
    try {
      await api.get("/rules");
      document.getElementById("signout").hidden = false;
      show();
    } catch (err) {
      api.setToken("");
      status.replaceChildren(errorBox(err));
    }
  });
  main.replaceChildren(h("h1", {}, "Sign in"), reason ? h("p", {}, reason) : null, form);
  input.focus();
}

api.onUnauthorized(() => {
  if (document.querySelector("form.signin")) return; // the form shows the refusal itself
  api.setToken("");
  document.getElementById("signout").hidden = true;
  signIn("This daemon requires a token (basic.authentication is on).");
});

document.getElementById("signout").addEventListener("click", () => {
  api.setToken("");
  document.getElementById("signout").hidden = true;
  signIn("Signed out.");
});
document.getElementById("signout").hidden = !api.token();
window.addEventListener("hashchange", show);
show();
