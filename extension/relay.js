// What the daemon asks for (`OPS`, the table in browserskill/browser/extension_protocol.py):
// CDP relayed through chrome.debugger for the sessions' tabs, whole input sequences run
// here, and tab and window operations through chrome.tabs/windows.

import { restrictedReason } from "./lib.js";
import { send, ws } from "./connection.js";
import { activates, focusedWindowId, keepingUserFocus, tabWindows } from "./focus.js";
import { agent, borrowed, overlaid, restore, save } from "./state.js";
import { OpError, checkAllowed } from "./tabs.js";
import { askBorrow, hideOverlay, prompts, showOverlay } from "./ui.js";

export const attached = new Set();

export async function handle(msg) {
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

// sequence (`index`) so the daemon can say which one failed.
export const inputOrder = new Map(); // tab id -> its last input command was handed to Chrome

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

// the daemon must know first that, say, the user cancelled debugging.
export const detachedTabs = new Set();
export const detachWaiters = new Map(); // tab id -> [resolve]

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


// The daemon's `abort` of a running cdp_sequence: it stops before its next command.
export function abortSequence(of) {
  if (sequences.has(of)) aborted.add(of);
}

// How many running sequences hold an abort not yet acted on (DevTools and the tests).
export function abortsPending() {
  return aborted.size;
}

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
  async overlay({ tabId, session_id, label, on, help }) {
    // help: the reason of the agent's request for help (Done / Decline), else the Stop bar
    await restore();
    if (on) overlaid[tabId] = { session_id, label: label || "", help: help || "" }; else delete overlaid[tabId];
    await save();
    if (on) await showOverlay(tabId, { mode: help ? "help" : "agent", session_id, label, reason: help });
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

