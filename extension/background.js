// BrowserSkill's service worker: one WebSocket to the daemon on 127.0.0.1, relaying CDP
// through chrome.debugger for the sessions' tabs, tab/window operations through
// chrome.tabs/windows, and the in-page UI (agent overlay with a stop button, borrow prompt).

import {
  DEFAULT_PORT, HEARTBEAT_MS, MIN_PROTOCOL, PROTOCOL, backoffDelay, handshakeProof,
  normalizeCode, restrictedReason, validPort, welcomeProved,
} from "./lib.js";

const HANDSHAKE_MS = 5_000;
const KEEPALIVE_ALARM = "bsk-keepalive";

let ws = null;
const link = { state: "disconnected", error: "", port: null, since: Date.now(), daemon: null };
let failures = 0;
let reconnectTimer = null;
// Set when the daemon refused this browser for a reason retrying can't mend (not paired,
// a secret it does not know): "unpaired" or "refused". Cleared by the user's next step.
let blocked = null;
let pairing = null; // the options page's pairing attempt: {code, finish(outcome)}
let heartbeat = null;
// session id -> {label, windowId}; tab id -> session id for borrowed tabs. Mirrored to
// chrome.storage.session so a restarted worker (MV3 idles them) still knows them.
let agent = {};
let borrowed = {};
// tab id -> {session_id, label}: agent tabs outside an Agent Window (a popup window the
// agent's page opened), so their overlay comes back after each navigation too.
let overlaid = {};
const attached = new Set();
const prompts = new Map(); // prompt token -> {tabId, finish(answer)}
let ready = null;

function restore() {
  ready ??= chrome.storage.session.get(["agent", "borrowed", "overlaid"]).then((s) => {
    agent = s.agent || {};
    borrowed = s.borrowed || {};
    overlaid = s.overlaid || {};
  });
  return ready;
}

function save() {
  return chrome.storage.session.set({ agent, borrowed, overlaid });
}

async function settings() {
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

// -- the connection -----------------------------------------------------------------

async function connect() {
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
    if (msg.type === "abort") {
      if (sequences.has(msg.of)) aborted.add(msg.of);
      return;
    }
    if (msg.id !== undefined) handle(msg);
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

async function pairedSecrets() {
  return (await chrome.storage.local.get("pairings")).pairings || {};
}

// The options page's Pair button: connect once with the code; answers how it went.
function pairWith(code) {
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

function reconnectNow() {
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

function send(msg) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
}

// -- requests from the daemon --------------------------------------------------------

class OpError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

async function handle(msg) {
  // Answer on the connection that asked: a new one numbers its requests afresh, and a
  // late answer must not settle one of its requests.
  const asker = ws;
  const answer = (reply) => { if (ws === asker) send(reply); };
  try {
    const fn = OPS[msg.op];
    if (!fn) throw new OpError("unknown_op", `unknown operation ${msg.op}`);
    const result = await fn(msg);
    answer({ id: msg.id, result: result ?? {} });
  } catch (e) {
    answer({ id: msg.id, error: { code: e.code || "browser_error", message: String(e.message || e) } });
  }
}

async function checkAllowed(tabId) {
  let tab;
  try { tab = await chrome.tabs.get(tabId); } catch { throw new OpError("no_tab", `no tab ${tabId}`); }
  const why = restrictedReason(tab.pendingUrl || tab.url);
  if (why) throw new OpError("restricted", `BrowserSkill does not touch ${why} (${tab.pendingUrl || tab.url})`);
  return tab;
}

// One CDP command through chrome.debugger; a failure names the command's place in a
// sequence (`index`) so the daemon can say which one failed.
const inputOrder = new Map(); // tab id -> its last input command was handed to Chrome

async function debuggerCommand(target, method, params, index) {
  if (method === "Page.navigate" || method === "Target.createTarget") {
    const why = restrictedReason(params?.url);
    if (why) throw new OpError("restricted", `BrowserSkill does not open ${why} (${params.url})`);
  }
  // A tab's input commands reach Chrome in the order they came: a press that waits on
  // the focus guard is handed over before a release sent after it (a cancel's
  // compensation), never overtaken.
  let handedOver = () => {};
  let before = null;
  if (method.startsWith("Input.")) {
    before = inputOrder.get(target.tabId);
    inputOrder.set(target.tabId, new Promise((resolve) => { handedOver = resolve; }));
  }
  try {
    if (before) await before;
    const run = () => {
      const reply = chrome.debugger.sendCommand(target, method, params || {});
      handedOver();
      return reply;
    };
    return await (activates(method, params) ? keepingUserFocus(target.tabId, run) : run());
  } catch (e) {
    // chrome.debugger folds the CDP error object into its message: {"code":..,"message":..}
    const text = String(e.message || e);
    let err;
    try {
      err = JSON.parse(text);
    } catch {
      // Not the page's answer but chrome.debugger's: the tab closed under the command.
      if (/no tab with given id|not attached to the tab|detached while handling/i.test(text)) {
        if (/detached while handling/i.test(text)) await detachReported(target.tabId);
        throw new OpError("tab_gone", text);
      }
      err = { code: -32000, message: text };
    }
    throw new OpError("cdp", JSON.stringify({ code: err.code, message: err.message, data: err.data, index }));
  } finally {
    handedOver(); // also when it failed before reaching Chrome
  }
}

// -- the user's focus ----------------------------------------------------------------
// A press sent through DevTools (mousePressed, touchStart, a tap) makes Chrome focus the
// tab's WebContents, and with it activate its window: the X input focus, and the user's
// typing, would move to the Agent Window. Nothing in the command can prevent it, so
// around such a command the window that has the focus (if it is another of this
// browser's) is noted and given the focus back as soon as Chrome reports the press's
// window focused, even a little after the command was answered (FOCUS_GRACE_MS). Agent
// tabs run with focus emulation (see `attach`), so their pages stay focused all along.
const FOCUS_GRACE_MS = 500;
const focusGuards = new Set(); // {user, agent, until, giving}

function activates(method, params) {
  const type = params?.type;
  return (method === "Input.dispatchMouseEvent" && type === "mousePressed")
    || (method === "Input.dispatchTouchEvent" && type === "touchStart")
    || (method === "Input.emulateTouchFromMouseEvent" && type === "mousePressed")
    || method === "Input.synthesizeTapGesture";
}

// Which window has the focus is asked again for every command (Chrome changes its mind
// without always saying so: a closed window, a window manager), in the background and at
// most every FOCUS_FRESH_MS, and kept from onFocusChanged in between: a press finds it
// fresh (a click's hit test came just before) and costs no extra IPC (~0.6 ms each).
const FOCUS_FRESH_MS = 250;
let focusedWindow = chrome.windows.WINDOW_ID_NONE;
let focusAsked = null; // {at, answer}
const tabWindows = new Map(); // attached tab id -> its window id

function focusedWindowId() {
  if (focusAsked && Date.now() - focusAsked.at < FOCUS_FRESH_MS) return focusAsked.answer;
  const answer = chrome.windows.getAll({ windowTypes: ["normal", "popup", "panel", "app", "devtools"] })
    .then((all) => {
      focusedWindow = all.find((w) => w.focused)?.id ?? chrome.windows.WINDOW_ID_NONE;
      return focusedWindow;
    });
  focusAsked = { at: Date.now(), answer: answer.then(() => focusedWindow, () => focusedWindow) };
  return focusAsked.answer;
}

async function windowOfTab(tabId) {
  if (!tabWindows.has(tabId)) tabWindows.set(tabId, (await chrome.tabs.get(tabId)).windowId);
  return tabWindows.get(tabId);
}

function giveFocusBack(guard) {
  guard.giving ??= chrome.windows.update(guard.user, { focused: true })
    .catch(() => { /* the user's window closed meanwhile */ })
    .finally(() => { guard.giving = null; });
  return guard.giving;
}

async function keepingUserFocus(tabId, run) {
  let guard = null;
  try {
    const [focused, agentWindow] = await Promise.all([focusedWindowId(), windowOfTab(tabId)]);
    // The user's window, never an Agent Window (another session's press may hold the
    // focus for a moment: then the window its guard gives it back to).
    const agentWindows = new Set(Object.values(agent).map((a) => a.windowId));
    const user = agentWindows.has(focused)
      ? [...focusGuards].find((g) => g.agent === focused)?.user ?? chrome.windows.WINDOW_ID_NONE
      : focused;
    if (user !== chrome.windows.WINDOW_ID_NONE && user !== agentWindow) {
      guard = { user, agent: agentWindow, until: Infinity };
    }
  } catch { /* no tab: nothing to give back */ }
  if (!guard) return await run();
  focusGuards.add(guard);
  try {
    return await run();
  } finally {
    guard.until = Date.now() + FOCUS_GRACE_MS;
    setTimeout(() => focusGuards.delete(guard), FOCUS_GRACE_MS);
    if (focusedWindow === guard.agent) await giveFocusBack(guard);
    else if (guard.giving) await guard.giving;
  }
}

chrome.windows.onFocusChanged.addListener((windowId) => {
  focusedWindow = windowId;
  if (focusAsked) focusAsked.answer = Promise.resolve(windowId);
  for (const guard of focusGuards) {
    if (guard.agent === windowId && Date.now() < guard.until) giveFocusBack(guard);
  }
});

chrome.tabs.onAttached.addListener((tabId, info) => {
  if (tabWindows.has(tabId)) tabWindows.set(tabId, info.newWindowId);
});

// A command cut short by a detach fails only once the `detached` message (with its reason)
// went to the daemon: Chrome answers the pending commands before it fires onDetach, and
// the daemon must know first that, say, the user cancelled debugging.
const detachedTabs = new Set();
const detachWaiters = new Map(); // tab id -> [resolve]

function detachReported(tabId, ms = 1000) {
  if (detachedTabs.has(tabId)) return Promise.resolve();
  return new Promise((resolve) => {
    detachWaiters.set(tabId, [...(detachWaiters.get(tabId) || []), resolve]);
    setTimeout(() => {
      const left = (detachWaiters.get(tabId) || []).filter((r) => r !== resolve);
      if (left.length) detachWaiters.set(tabId, left); else detachWaiters.delete(tabId);
      resolve();
    }, ms);
  });
}

// Sequences running now, by message id, and those the daemon asked to stop.
const sequences = new Set();
const aborted = new Set();

const OPS = {
  async cdp({ tabId, sessionId, method, params }) {
    focusedWindowId(); // fresh for the press that may follow (see FOCUS_FRESH_MS)
    return await debuggerCommand(sessionId ? { tabId, sessionId } : { tabId }, method, params);
  },
  // Commands in order, with no round trip to the daemon in between (a click's
  // move/press/release, then a read of the element): each is sent once the one before
  // was answered, unless that one says `answered_first: false` (a mouse move: Chrome
  // keeps input in order); an `optional` one answers null if it fails. Stops
  // before the next command if the daemon aborts it (a cancel: the button is then
  // released off the page) or the connection that asked for it is gone.
  async cdp_sequence({ id, tabId, sessionId, commands }) {
    const target = sessionId ? { tabId, sessionId } : { tabId };
    const asker = ws;
    const replies = [];
    sequences.add(id);
    try {
      for (const [index, { method, params, answered_first, optional }] of commands.entries()) {
        if (aborted.has(id) || ws !== asker) break;
        let reply = debuggerCommand(target, method, params, index);
        if (optional) reply = reply.catch(() => null); // a read riding along: null if it fails
        reply.catch(() => {}); // awaited below; never an unhandled rejection meanwhile
        replies.push(reply);
        if (answered_first !== false) await reply;
      }
      const results = await Promise.all(replies);
      return replies.length < commands.length ? { results, stopped: true } : { results };
    } finally {
      sequences.delete(id);
      aborted.delete(id);
    }
  },
  async attach({ tabId }) {
    tabWindows.set(tabId, (await checkAllowed(tabId)).windowId);
    if (!attached.has(tabId)) {
      try {
        await chrome.debugger.attach({ tabId }, "1.3");
      } catch (e) {
        if (!/already attached/i.test(String(e.message))) throw new OpError("attach_failed", String(e.message || e));
      }
      attached.add(tabId);
      detachedTabs.delete(tabId);
      // The page behaves as in a focused window (as headless, where all windows are) even
      // when the user's window has the focus: no blur when it is given back after a click.
      await chrome.debugger.sendCommand({ tabId }, "Emulation.setFocusEmulationEnabled", { enabled: true })
        .catch(() => { /* an older browser: the page may see blur after a click */ });
    }
    const info = await chrome.debugger.sendCommand({ tabId }, "Target.getTargetInfo", {});
    return { targetId: info.targetInfo.targetId, url: info.targetInfo.url, title: info.targetInfo.title,
      openerId: info.targetInfo.openerId || null };
  },
  async detach({ tabId }) {
    attached.delete(tabId);
    detachedTabs.add(tabId); // no onDetach for our own detach: nothing to wait for
    try { await chrome.debugger.detach({ tabId }); } catch { /* already gone */ }
    return {};
  },
  async window_create({ session_id, label, url }) {
    await restore();
    const win = await chrome.windows.create({ url: url || "about:blank", focused: false, type: "normal" });
    agent[session_id] = { label: label || "", windowId: win.id };
    await save();
    return { windowId: win.id, tabId: win.tabs[0].id };
  },
  async tab_create({ windowId, url }) {
    const tab = await chrome.tabs.create({ windowId, url: url || "about:blank", active: true });
    return { tabId: tab.id };
  },
  async tab_close({ tabId }) {
    attached.delete(tabId);
    try { await chrome.tabs.remove(tabId); } catch { /* already closed */ }
    return {};
  },
  async window_close({ windowId }) {
    try { await chrome.windows.remove(windowId); } catch { /* already closed */ }
    return {};
  },
  // An Agent Window's bounds (window resize): the window holding `tabId`, or `windowId`;
  // with `bounds` ({windowState} or {left, top, width, height}), set first. Any other
  // window (the user's, a popup the page opened) is refused: it is never touched.
  async window_bounds({ tabId, windowId, bounds }) {
    await restore();
    if (tabId !== undefined) {
      let tab;
      try { tab = await chrome.tabs.get(tabId); } catch { throw new OpError("no_tab", `no tab ${tabId}`); }
      windowId = tab.windowId;
    }
    if (!Object.values(agent).some((a) => a.windowId === windowId)) {
      throw new OpError("not_agent_window", `window ${windowId} is not an Agent Window: `
        + "BrowserSkill resizes only its own windows (not the user's, nor a popup the page opened)");
    }
    if (bounds) {
      const change = {};
      if (bounds.windowState !== undefined) change.state = bounds.windowState;
      for (const k of ["left", "top", "width", "height"]) if (bounds[k] !== undefined) change[k] = bounds[k];
      await chrome.windows.update(windowId, change);
    }
    const w = await chrome.windows.get(windowId);
    return { windowId, bounds: { left: w.left, top: w.top, width: w.width, height: w.height, windowState: w.state } };
  },
  async tabs_query() {
    await restore();
    const agentWindows = new Map(Object.entries(agent).map(([sid, a]) => [a.windowId, sid]));
    const tabs = await chrome.tabs.query({});
    return {
      tabs: tabs.map((t) => ({
        tabId: t.id, windowId: t.windowId, index: t.index, url: t.pendingUrl || t.url || "",
        title: t.title || "", active: t.active, agent_session: agentWindows.get(t.windowId) || null,
        borrowed_by: borrowed[t.id] || null, restricted: restrictedReason(t.pendingUrl || t.url),
      })),
    };
  },
  async tab_get({ tabId }) {
    try {
      const t = await chrome.tabs.get(tabId);
      return { tab: { tabId: t.id, windowId: t.windowId, index: t.index, url: t.url, title: t.title } };
    } catch {
      return { tab: null };
    }
  },
  async tab_move({ tabId, windowId, index, borrowed_by }) {
    await restore();
    const moved = await chrome.tabs.move(tabId, { windowId, index: index ?? -1 });
    await chrome.tabs.update(tabId, { active: true });
    if (borrowed_by) borrowed[tabId] = borrowed_by; else delete borrowed[tabId];
    await save();
    const t = Array.isArray(moved) ? moved[0] : moved;
    return { windowId: t.windowId, index: t.index };
  },
  // Put a borrowed tab back: its original window and index, or the most recent normal
  // window that is not an Agent Window, or a new window of its own.
  async tab_restore({ tabId, windowId, index }) {
    await restore();
    await hideOverlay(tabId);
    let fallback = null;
    let win = null;
    try { win = await chrome.windows.get(windowId); } catch { win = null; }
    const agentWindows = new Set(Object.values(agent).map((a) => a.windowId));
    if (!win) {
      const normal = (await chrome.windows.getAll({ windowTypes: ["normal"] }))
        .filter((w) => !agentWindows.has(w.id));
      if (normal.length) {
        win = normal.find((w) => w.focused) || normal[normal.length - 1];
        fallback = "the original window is gone: moved to another window";
        index = -1;
      }
    }
    let t;
    if (win) {
      const moved = await chrome.tabs.move(tabId, { windowId: win.id, index: index ?? -1 });
      t = Array.isArray(moved) ? moved[0] : moved;
    } else {
      const w = await chrome.windows.create({ tabId, focused: false });
      t = w.tabs[0];
      fallback = "the original window is gone: the tab is in a new window";
    }
    delete borrowed[tabId];
    await save();
    return { windowId: t.windowId, index: t.index, fallback };
  },
  async overlay({ tabId, session_id, label, on }) {
    await restore();
    if (on) overlaid[tabId] = { session_id, label: label || "" }; else delete overlaid[tabId];
    await save();
    if (on) await showOverlay(tabId, { mode: "agent", session_id, label });
    else await hideOverlay(tabId);
    return {};
  },
  async borrow_prompt({ tabId, session_id, label, timeout_s }) {
    return await askBorrow(tabId, session_id, label, timeout_s);
  },
  async prompt_cancel({ tabId }) {
    for (const p of prompts.values()) if (p.tabId === tabId) p.finish({ approved: false, reason: "cancelled" });
    return {};
  },
  async session_bind({ session_id, label, windowId }) {
    await restore();
    agent[session_id] = { label: label || "", windowId };
    await save();
    return {};
  },
  async session_end({ session_id }) {
    await restore();
    delete agent[session_id];
    for (const [tabId, sid] of Object.entries(borrowed)) if (sid === session_id) delete borrowed[tabId];
    for (const [tabId, o] of Object.entries(overlaid)) if (o.session_id === session_id) delete overlaid[tabId];
    await save();
    return {};
  },
};

async function openAgentSessions() {
  await restore();
  const out = [];
  for (const [sid, a] of Object.entries(agent)) {
    try {
      const win = await chrome.windows.get(a.windowId, { populate: true });
      out.push({ session_id: sid, label: a.label, windowId: a.windowId,
        tabs: win.tabs.map((t) => ({ tabId: t.id, url: t.url })) });
    } catch {
      delete agent[sid];
    }
  }
  await save();
  return out;
}

// The daemon says which sessions it still has for this browser; forget the others.
async function reconcile(live) {
  await restore();
  const keep = new Set(live);
  for (const sid of Object.keys(agent)) if (!keep.has(sid)) delete agent[sid];
  for (const [tabId, sid] of Object.entries(borrowed)) if (!keep.has(sid)) delete borrowed[tabId];
  await save();
}

// -- in-page UI ------------------------------------------------------------------------

async function inject(tabId, config) {
  await chrome.scripting.executeScript({ target: { tabId }, files: ["overlay.js"] });
  return (await chrome.scripting.executeScript({
    target: { tabId }, func: (cfg) => globalThis.__bskOverlay.show(cfg), args: [config],
  }))[0]?.result;
}

async function showOverlay(tabId, config) {
  try { await inject(tabId, config); } catch { /* a page we may not script: no overlay */ }
}

async function hideOverlay(tabId) {
  try {
    await chrome.scripting.executeScript({
      target: { tabId }, func: () => globalThis.__bskOverlay?.hide(),
    });
  } catch { /* gone */ }
}

// Ask the user in the tab itself. Any answer but an explicit, trusted "approve" within the
// countdown is a deny: it fails closed.
function askBorrow(tabId, sessionId, label, timeoutS) {
  const token = crypto.randomUUID();
  const seconds = Math.max(1, Math.min(300, Number(timeoutS) || 30));
  return new Promise((resolve) => {
    let done = false;
    const timer = setTimeout(() => finish({ approved: false, reason: "timeout" }), seconds * 1000);
    function finish(answer) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      prompts.delete(token);
      hideOverlay(tabId);
      resolve(answer);
    }
    prompts.set(token, { tabId, finish });
    checkAllowed(tabId)
      .then(() => inject(tabId, { mode: "borrow", token, session_id: sessionId, label, seconds }))
      .catch((e) => finish({ approved: false, reason: e.code === "restricted" ? "restricted" : "no_prompt",
        message: String(e.message || e) }));
  });
}

chrome.runtime.onMessage.addListener((msg, sender, reply) => {
  if (msg?.type === "status") {
    restore().then(async () => {
      const cfg = await settings();
      reply({ link, agent, borrowed, instance_id: cfg.instanceId,
        paired: Boolean((await pairedSecrets())[cfg.port]) });
    });
    return true;
  }
  if (msg?.type === "reconnect") {
    reconnectNow();
    reply({});
    return false;
  }
  // Only the extension's own pages pair (never a content script in a web page).
  if (msg?.type === "pair" && (sender.url || "").startsWith(chrome.runtime.getURL(""))) {
    const code = normalizeCode(msg.code);
    if (!/^[A-Z0-9]{10}$/.test(code)) {
      reply({ ok: false, reason: "a pairing code has 10 letters and digits (e.g. ABCDE-FGHJK)" });
      return false;
    }
    pairWith(code).then(reply);
    return true;
  }
  const tabId = sender.tab?.id;
  if (msg?.type === "borrow_answer" && tabId !== undefined) {
    const p = prompts.get(msg.token);
    if (p && p.tabId === tabId) p.finish({ approved: msg.approved === true, reason: msg.approved === true ? "approved" : "denied" });
    return false;
  }
  if (msg?.type === "stop" && tabId !== undefined) {
    restore().then(() => send({ type: "interrupt", session_id: msg.session_id, tabId }));
    return false;
  }
  return false;
});

// -- browser events ----------------------------------------------------------------------

chrome.debugger.onEvent.addListener((source, method, params) => {
  if (source.tabId === undefined) return;
  if (method === "Target.attachedToTarget" && params?.targetInfo?.type === "iframe") {
    // An out-of-process iframe renders apart: it gets focus emulation of its own, as its
    // tab did on attach, or it would see blur when the user's window gets the focus back.
    chrome.debugger.sendCommand({ tabId: source.tabId, sessionId: params.sessionId },
      "Emulation.setFocusEmulationEnabled", { enabled: true }).catch(() => {});
  }
  send({ type: "event", tabId: source.tabId, sessionId: source.sessionId, method, params });
});

chrome.debugger.onDetach.addListener((source, reason) => {
  if (source.tabId === undefined) return;
  attached.delete(source.tabId);
  send({ type: "detached", tabId: source.tabId, reason });
  detachedTabs.add(source.tabId);
  for (const resolve of detachWaiters.get(source.tabId) || []) resolve();
  detachWaiters.delete(source.tabId);
});

// A tab an agent tab opened itself (window.open, target=_blank): the daemon adopts it into
// that tab's session. Only tabs opened from a tab we act in or in an Agent Window are
// reported. Chrome's openerTabId is the tab strip's idea (often the active tab), so the
// daemon checks the real opener (CDP's openerId) before adopting.
chrome.tabs.onCreated.addListener(async (tab) => {
  const opener = tab.openerTabId;
  if (opener === undefined) return;
  await restore();
  const agentWindow = Object.values(agent).some((a) => a.windowId === tab.windowId);
  if (!agentWindow && !attached.has(opener) && !borrowed[opener]) return;
  send({ type: "tab_opened", tabId: tab.id, openerTabId: opener, windowId: tab.windowId });
});

chrome.tabs.onRemoved.addListener((tabId, info) => {
  if (overlaid[tabId]) { delete overlaid[tabId]; save(); }
  attached.delete(tabId);
  tabWindows.delete(tabId);
  inputOrder.delete(tabId);
  detachedTabs.delete(tabId);
  for (const p of prompts.values()) if (p.tabId === tabId) p.finish({ approved: false, reason: "tab_closed" });
  send({ type: "tab_removed", tabId, windowId: info.windowId });
});

chrome.tabs.onUpdated.addListener(async (tabId, change, tab) => {
  if (change.status === "loading" && change.url !== undefined) {
    for (const p of prompts.values()) if (p.tabId === tabId) p.finish({ approved: false, reason: "navigated" });
  }
  if (change.status !== "complete") return;
  await restore();
  const sid = borrowed[tabId] || Object.keys(agent).find((s) => agent[s].windowId === tab.windowId)
    || (agent[overlaid[tabId]?.session_id] ? overlaid[tabId].session_id : undefined);
  if (sid && !restrictedReason(tab.url)) showOverlay(tabId, { mode: "agent", session_id: sid, label: agent[sid]?.label });
});

chrome.windows.onRemoved.addListener(async (windowId) => {
  await restore();
  send({ type: "window_removed", windowId });
  for (const [sid, a] of Object.entries(agent)) if (a.windowId === windowId) delete agent[sid];
  await save();
});

chrome.storage.onChanged.addListener((changes, area) => {
  // A pairing attempt connects with the new settings itself.
  if (area === "local" && (changes.port || changes.label) && !pairing) reconnectNow();
});

// Keep-alive: an open WebSocket with traffic keeps an MV3 worker running (Chrome 116+);
// the alarm wakes a worker that was stopped anyway, and reconnects it.
chrome.alarms.create(KEEPALIVE_ALARM, { periodInMinutes: 0.5 });
chrome.alarms.onAlarm.addListener((a) => { if (a.name === KEEPALIVE_ALARM) connect(); });
chrome.runtime.onStartup.addListener(connect);
chrome.runtime.onInstalled.addListener(connect);

// For DevTools on the worker (and the tests): the link's state.
globalThis.bsk = {
  link, reconnectNow,
  configure: (settings) => chrome.storage.local.set(settings).then(() => true), // as options.html
  pair: (code) => pairWith(normalizeCode(code)), // as options.html's Pair button
  get agent() { return agent; },
  get borrowed() { return borrowed; },
};
connect();
