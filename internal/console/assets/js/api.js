// The REST client of the console: every call carries the token the user
// signed in with (kept in sessionStorage, so it dies with the tab).

const tokenKey = "rekuiper.token";

export function token() {
  return sessionStorage.getItem(tokenKey) || "";
}

export function setToken(t) {
  if (t) sessionStorage.setItem(tokenKey, t.trim());
  else sessionStorage.removeItem(tokenKey);
}

// ApiError carries the status and the server's message; pos is the
// {line, col} an SQL error names, when it names one.
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
    this.pos = sqlPosition(message);
  }
}

// sqlPosition finds "line:col: " in a parser message.
export function sqlPosition(message) {
  const m = /(?:^|[\s(])(\d+):(\d+): /.exec(message || "");
  return m ? { line: Number(m[1]), col: Number(m[2]) } : null;
}

// unauthorized is called when a call answers 401 (the app shows sign-in).
let unauthorized = () => {};
export function onUnauthorized(f) {
  unauthorized = f;
}

function headers(json) {
  const h = { Accept: "application/json" };
  if (json) h["Content-Type"] = "application/json";
  const t = token();
  if (t) h.Authorization = "Bearer " + t;
  return h;
}

// call sends one request; a JSON answer is decoded, any other is text.
export async function call(method, path, body, opts = {}) {
  const init = { method, headers: headers(body !== undefined), signal: opts.signal };
  if (body !== undefined) init.body = typeof body === "string" ? body : JSON.stringify(body);
  const res = await fetch(path, init);
  const type = res.headers.get("Content-Type") || "";
  const data = type.includes("application/json") ? await res.json() : await res.text();
  if (!res.ok) {
    if (res.status === 401) unauthorized();
    const msg = data && typeof data === "object" ? data.message : String(data);
    throw new ApiError(res.status, msg || res.statusText);
  }
  return data;
}

export const get = (path, opts) => call("GET", path, undefined, opts);
export const post = (path, body) => call("POST", path, body === undefined ? "" : body);
export const put = (path, body) => call("PUT", path, body);
export const del = (path) => call("DELETE", path);

// stream reads a server-sent event stream with fetch (EventSource cannot
// send the Authorization header) and calls onEvent with each event's
// decoded data until signal aborts or the stream ends.
export async function stream(path, onEvent, signal) {
  const res = await fetch(path, { headers: { ...headers(false), Accept: "text/event-stream" }, signal });
  if (!res.ok) {
    const data = await res.json().catch(() => ({}));
    if (res.status === 401) unauthorized();
    throw new ApiError(res.status, data.message || res.statusText);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let end;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const data = block
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).trimStart())
        .join("\n");
      if (data) onEvent(JSON.parse(data));
    }
  }
}
