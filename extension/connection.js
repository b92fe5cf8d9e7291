// The connection to the daemon: one WebSocket to 127.0.0.1, the handshake that proves
// the pairing both ways, pairing itself, heartbeats and reconnects. What the daemon asks
// for is handed to the handlers `serve` sets (relay.js); nothing is obeyed before the
// daemon's welcome has proved the pairing secret.

import {
  DEFAULT_PORT, HEARTBEAT_MS, MIN_PROTOCOL, PROTOCOL, backoffDelay, handshakeProof,
  validPort, welcomeProved,
} from "./lib.js";
import { openAgentSessions, reconcile, restore } from "./state.js";

const HANDSHAKE_MS = 5_000;

export let ws = null;
export const link = { state: "disconnected", error: "", port: null, since: Date.now(), daemon: null };
let failures = 0;
let reconnectTimer = null;
// Set when the daemon refused this browser for a reason retrying can't mend (not paired,
// a secret it does not know): "unpaired" or "refused". Cleared by the user's next step.
let blocked = null;
// Operations of this browser's sessions that wait for a person's approval (the daemon's
// "approvals" message): the popup lists them with Approve / Deny.
export const approvals = { pending: [] };
export let pairing = null; // the options page's pairing attempt: {code, finish(outcome)}
let heartbeat = null;
// What the daemon's messages are handed to: set by `serve`.
const handlers = { request: (_msg) => {}, abort: (_of) => {} };

export function serve(request, abort) {
  handlers.request = request;
  handlers.abort = abort;
}

export async function settings() {
  const s = await chrome.storage.local.get(["port", "label", "instance_id"]);
  if (!s.instance_id) {
    s.instance_id = crypto.randomUUID();
    await chrome.storage.local.set({ instance_id: s.instance_id });
  }
  return { port: validPort(s.port) || DEFAULT_PORT, label: s.label || "", instanceId: s.instance_id };
}

async function browserInfo() {
  const ua = navigator.userAgentData;
  let brands = ua?.brands || [];
  try {
    brands = (await ua.getHighEntropyValues(["fullVersionList"])).fullVersionList || brands;
  } catch { /* the plain brand list will do */ }
  const pick = brands.find((b) => /Edge|Chrome|Chromium|Brave|Opera/.test(b.brand) && b.brand !== "Chromium")
    || brands.find((b) => b.brand === "Chromium");
  if (pick) return { name: pick.brand, version: pick.version };
  const m = navigator.userAgent.match(/(Chrome|Chromium)\/([\d.]+)/);
  return { name: m ? m[1] : "Chromium", version: m ? m[2] : "" };
}


export async function connect() {
  if (ws || blocked) return; // refused as unpaired: only the user's next step retries
  clearTimeout(reconnectTimer);
  reconnectTimer = null;
  await restore();
  const cfg = await settings();
  if (ws || blocked) return;
  link.port = cfg.port;
  setState("connecting");
  let sock;
  try {
    sock = new WebSocket(`ws://127.0.0.1:${cfg.port}/`);
  } catch (e) {
    link.error = String(e);
    return retry();
  }
  ws = sock;
  const handshakeTimer = setTimeout(() => {
    if (link.state !== "connected") {
      link.error = "no handshake answer within 5 s";
      sock.close();
    }
  }, HANDSHAKE_MS);
  // The daemon speaks first: a challenge whose nonce the hello's proof covers.
  let proved = null; // {secretHex, serverNonce, clientNonce, code}
  async function hello(challenge) {
    const code = pairing?.code;
    const secretHex = (await pairedSecrets())[cfg.port];
    const got = await handshakeProof({ code, secretHex, serverNonce: challenge.nonce, instanceId: cfg.instanceId });
    proved = { secretHex: got.secretHex, serverNonce: challenge.nonce, clientNonce: got.part?.nonce, code };
    sock.send(JSON.stringify({
      type: "hello", protocol: PROTOCOL, min_protocol: MIN_PROTOCOL,
      instance_id: cfg.instanceId, label: cfg.label, browser: await browserInfo(),
      extension_version: chrome.runtime.getManifest().version,
      sessions: await openAgentSessions(),
      ...(got.field ? { [got.field]: got.part } : {}),
    }));
  }
  async function welcome(msg) {
    clearTimeout(handshakeTimer);
    if (!proved || !await welcomeProved(proved.secretHex, msg.proof, proved.serverNonce,
      proved.clientNonce, cfg.instanceId)) {
      // Whoever answers on this port does not hold the pairing secret: obey nothing.
      refuse("refused", `the process on 127.0.0.1:${cfg.port} could not prove the pairing: `
        + "it is not the daemon this browser paired with");
      sock.close();
      return;
    }
    if (proved.code) {
      await chrome.storage.local.set({ pairings: { ...await pairedSecrets(), [cfg.port]: proved.secretHex } });
      finishPairing({ ok: true, port: cfg.port });
    }
    failures = 0;
    link.error = "";
    link.daemon = { version: msg.daemon_version, protocol: msg.protocol };
    setState("connected");
    heartbeat = setInterval(() => send({ type: "ping", t: Date.now() }), msg.heartbeat_ms || HEARTBEAT_MS);
  }
  // Messages are handled one after another: the welcome's check ends before any request.
  let inbox = Promise.resolve();
  sock.onmessage = (e) => { inbox = inbox.then(() => receive(e)).catch(() => {}); };
  async function receive(e) {
    let msg;
    try { msg = JSON.parse(e.data); } catch { return; }
    if (ws !== sock) return;
    if (msg.type === "challenge") return hello(msg);
    if (msg.type === "welcome") return welcome(msg);
    if (msg.type === "refused") {
      if (proved?.code && msg.code === "bad_code") {
        // A pairing that failed leaves things as they were: a browser paired before
        // goes on with its secret (the retry), one that was not is told so.
        link.error = `the daemon refused: ${msg.reason}`;
        finishPairing({ ok: false, reason: link.error });
        return;
      }
      // Not paired, a secret the daemon does not know, a wrong code, another protocol:
      // trying again would not help; the user's next step (pair, reconnect) does.
      refuse(["not_paired", "bad_secret"].includes(msg.code) ? "unpaired" : "refused",
        `the daemon refused: ${msg.reason}`);
      return;
    }
    if (link.state !== "connected") return; // nothing is obeyed before the welcome's proof
    if (msg.type === "sessions") {
      reconcile(msg.sessions || []);
      return;
    }
    if (msg.type === "pong") return;
    if (msg.type === "approvals") {
      approvals.pending = Array.isArray(msg.pending) ? msg.pending : [];
      return;
    }
    if (msg.type === "abort") {
      handlers.abort(msg.of);
      return;
    }
    if (msg.id !== undefined) handlers.request(msg);
  }
  sock.onerror = () => { link.error ||= `cannot reach the daemon on 127.0.0.1:${cfg.port}`; };
  sock.onclose = (e) => {
    clearTimeout(handshakeTimer);
    if (ws !== sock) return;
    ws = null;
    clearInterval(heartbeat);
    heartbeat = null;
    if (!blocked && e.code === 1008 && link.state !== "connected") {
      link.error ||= `the daemon refused: ${e.reason}`;
    }
    finishPairing({ ok: false, reason: link.error || "the connection closed before the daemon answered" });
    if (blocked) { setState(blocked); return; }
    setState("disconnected");
    retry();
  };
}

// Refused for good (until the user pairs, reconnects or changes the settings).
function refuse(state, error) {
  blocked = state;
  link.error = error;
  finishPairing({ ok: false, reason: error });
}

export async function pairedSecrets() {
  return (await chrome.storage.local.get("pairings")).pairings || {};
}

// The options page's Pair button: connect once with the code; answers how it went.
export function pairWith(code) {
  finishPairing({ ok: false, reason: "replaced by a newer pairing attempt" });
  return new Promise((resolve) => {
    const timer = setTimeout(() => finishPairing({ ok: false, reason: "no answer from the daemon within 10 s" }), 10_000);
    pairing = { code, finish: (outcome) => { clearTimeout(timer); resolve(outcome); } };
    reconnectNow();
  });
}

function finishPairing(outcome) {
  const p = pairing;
  pairing = null;
  p?.finish(outcome);
}

function retry() {
  if (reconnectTimer || blocked) return;
  const delay = backoffDelay(failures++);
  reconnectTimer = setTimeout(() => { reconnectTimer = null; connect(); }, delay);
}

export function reconnectNow() {
  failures = 0;
  blocked = null;
  if (ws) {
    const old = ws;
    ws = null;
    clearInterval(heartbeat);
    old.close();
  }
  clearTimeout(reconnectTimer);
  reconnectTimer = null;
  connect();
}

function setState(state) {
  link.state = state;
  link.since = Date.now();
  chrome.action.setBadgeText({ text: state === "connected" ? "" : "off" }).catch(() => {});
}

// Only on a connection the daemon has welcomed: a page's event is page content, for a
// daemon that proved the pairing; and one sent before the hello (mid-handshake after a
// drop) got this browser refused for good. Dropped otherwise, as while no connection is
// open (the daemon re-adopts the tabs once welcomed). True when it went out.
export function send(msg) {
  if (!ws || ws.readyState !== WebSocket.OPEN || link.state !== "connected") return false;
  ws.send(JSON.stringify(msg));
  return true;
}
