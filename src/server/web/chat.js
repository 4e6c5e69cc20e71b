// mllm serve's chat page: a conversation kept here, sent whole to
// POST /v1/chat/completions with stream: true, the Server-Sent Events read
// from the response body as they come. Same origin as the API, so no CORS;
// the API key (if the server has one) is sent as a Bearer token.
"use strict";

const $ = (id) => document.getElementById(id);
const messages = [];  // [{role, content}] of the conversation so far
let controller = null; // the running request's AbortController

function headers(json) {
  const h = {};
  if (json) h["Content-Type"] = "application/json"; // the server refuses other types (415)
  const key = $("key").value.trim();
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

function setState(s, text) {
  document.body.dataset.state = s;
  $("send").disabled = s === "generating";
  $("stop").disabled = s !== "generating";
  if (text !== undefined) $("status").textContent = text;
}

async function errorText(resp) {
  try {
    const j = await resp.json();
    if (j && j.error && j.error.message) return resp.status + ": " + j.error.message;
  } catch (e) { /* not JSON: the status says enough */ }
  return "HTTP " + resp.status;
}

async function loadModel() {
  let resp;
  try {
    resp = await fetch("/v1/models", { headers: headers(false) });
  } catch (e) {
    $("model").textContent = "server unreachable";
    setState("idle", String(e));
    return;
  }
  if (resp.status === 401) {
    $("keybar").hidden = false;
    $("keynote").textContent = $("key").value ? "this key is not accepted" : "this server needs its API key";
    $("model").textContent = "API key needed";
    setState("idle");
    return;
  }
  if (!resp.ok) { $("model").textContent = await errorText(resp); setState("idle"); return; }
  const j = await resp.json();
  const m = j.data && j.data[0];
  $("keynote").textContent = "";
  $("model").textContent = m ? m.id + (m.context_length ? " · " + m.context_length + " tokens of context" : "") : "no model";
  document.body.dataset.model = m ? m.id : "";
  setState("idle");
}

function addMessage(role, text) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  const label = document.createElement("span");
  label.className = "role";
  label.textContent = role;
  const body = document.createElement("span");
  body.className = "text";
  body.textContent = text;
  div.append(label, body);
  $("log").append(div);
  div.scrollIntoView({ block: "end" });
  return body;
}

function addNote(text, isError) {
  const p = document.createElement("div");
  p.className = "note" + (isError ? " error" : "");
  p.textContent = text;
  $("log").append(p);
}

function requestBody() {
  const all = [];
  const sys = $("system").value.trim();
  if (sys) all.push({ role: "system", content: sys });
  const body = { messages: all.concat(messages), stream: true };
  const t = $("temperature").value, n = $("max_tokens").value;
  if (t !== "") body.temperature = Number(t);
  if (n !== "") body.max_tokens = Number(n);
  return body;
}

// Reads "data: ..." events from the stream; calls onEvent(obj) for each
// JSON payload and returns at "data: [DONE]" or the end of the body.
async function readEvents(resp, onEvent) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      for (const line of ev.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") return;
        onEvent(JSON.parse(data));
      }
    }
  }
}

async function send(text) {
  messages.push({ role: "user", content: text });
  addMessage("user", text);
  const out = addMessage("assistant", "");
  const reply = { role: "assistant", content: "" };
  let chunks = 0, finish = null, ended = "error", painting = null;
  /* A fast model sends hundreds of events a second: the text is painted at
     most every 50 ms, not once per event (each paint re-lays out the whole
     answer, which starved the page). */
  const paint = () => {
    painting = null;
    out.textContent = reply.content;
    out.parentElement.dataset.chunks = String(chunks);
    out.scrollIntoView({ block: "end" });
  };
  controller = new AbortController();
  setState("generating", "generating…");
  const t0 = performance.now();
  try {
    const resp = await fetch("/v1/chat/completions", {
      method: "POST", headers: headers(true), body: JSON.stringify(requestBody()), signal: controller.signal,
    });
    if (!resp.ok) throw new Error(await errorText(resp));
    await readEvents(resp, (ev) => {
      if (ev.error) throw new Error(ev.error.message || "the server ended the stream with an error");
      const c = ev.choices && ev.choices[0];
      if (!c) return;
      if (c.delta && c.delta.content) {
        reply.content += c.delta.content;
        chunks++;
        if (!painting) painting = setTimeout(paint, 50);
      }
      if (c.finish_reason) finish = c.finish_reason;
    });
    ended = finish || "end";
    setState("idle", "done in " + ((performance.now() - t0) / 1000).toFixed(1) + " s");
    if (finish === "length") addNote("(cut short: max tokens reached, or the context is full)");
  } catch (e) {
    if (e.name === "AbortError") {
      ended = "stopped";
      addNote("(stopped)");
      setState("idle", "stopped");
    } else {
      addNote(String(e.message || e), true);
      setState("idle", "error");
      if (String(e.message).startsWith("401")) loadModel();
    }
  } finally {
    if (painting) clearTimeout(painting);
    paint(); /* the whole answer, before it is marked done */
    controller = null;
    out.parentElement.dataset.done = ended;
  }
  // What was generated stays in the conversation, even when stopped.
  if (reply.content) messages.push(reply);
  else messages.pop();
}

$("form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const text = $("input").value;
  if (!text.trim() || controller) return;
  $("input").value = "";
  send(text);
});
$("input").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); $("form").requestSubmit(); }
});
$("stop").addEventListener("click", () => { if (controller) controller.abort(); });
$("new").addEventListener("click", () => {
  if (controller) controller.abort();
  messages.length = 0;
  $("log").textContent = "";
  $("status").textContent = "";
});
$("key").addEventListener("change", () => {
  sessionStorage.setItem("mllm-key", $("key").value);
  loadModel();
});
$("key").value = sessionStorage.getItem("mllm-key") || "";
loadModel();
