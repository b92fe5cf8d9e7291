// BrowserSkill's service worker: the wiring. connection.js keeps the WebSocket to the
// daemon; relay.js serves its requests (CDP through chrome.debugger, tabs and windows);
// focus.js keeps the user's focus; ui.js shows the overlay and the borrow prompt;
// state.js remembers the sessions. Listeners are registered here, at the top level, as
// an MV3 worker must.

import { normalizeCode, restrictedReason } from "./lib.js";
import {
  approvals, connect, link, pairedSecrets, pairWith, pairing, reconnectNow, send, serve, settings,
} from "./connection.js";
import { tabWindows } from "./focus.js";
import {
  abortSequence, abortsPending, attached, detachWaiters, detachedTabs, handle, inputOrder,
} from "./relay.js";
import { agent, borrowed, overlaid, restore, save } from "./state.js";
import { prompts, showOverlay } from "./ui.js";

const KEEPALIVE_ALARM = "bsk-keepalive";

serve(handle, abortSequence);

chrome.runtime.onMessage.addListener((msg, sender, reply) => {
  if (msg?.type === "status") {
    restore().then(async () => {
      const cfg = await settings();
      reply({ link, agent, borrowed, approvals: approvals.pending, instance_id: cfg.instanceId,
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
  // An approval comes only from the extension's own popup, and never from one shown in a
  // tab bsk drives (an agent could open popup.html there and click): docs/safety.md.
  if (msg?.type === "approval_answer" && sender.url === chrome.runtime.getURL("popup.html")
      && ["approve", "deny"].includes(msg.answer)) {
    restore().then(() => {
      const tab = sender.tab;
      const driven = tab !== undefined && (attached.has(tab.id) || borrowed[tab.id] !== undefined
        || Object.values(agent).some((a) => a.windowId === tab.windowId));
      if (driven && msg.answer === "approve") {
        reply({ ok: false, reason: "an approval from a tab bsk drives is refused" });
        return;
      }
      const sent = send({ type: "approval_answer", op_id: msg.op_id, answer: msg.answer, tabId: tab?.id });
      reply(sent ? { ok: true } : { ok: false, reason: "not connected to the daemon: the answer was not delivered" });
    });
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
  if (msg?.type === "help_answer" && tabId !== undefined && ["done", "decline"].includes(msg.answer)) {
    restore().then(() => send({ type: "help_answer", session_id: msg.session_id, answer: msg.answer, tabId }));
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
  const help = overlaid[tabId]?.session_id === sid ? overlaid[tabId].help : "";
  if (sid && !restrictedReason(tab.url)) {
    showOverlay(tabId, { mode: help ? "help" : "agent", session_id: sid, label: agent[sid]?.label, reason: help });
  }
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
  link, reconnectNow, send, // send: what every browser event and user answer goes through
  configure: (settings) => chrome.storage.local.set(settings).then(() => true), // as options.html
  pair: (code) => pairWith(normalizeCode(code)), // as options.html's Pair button
  get agent() { return agent; },
  get borrowed() { return borrowed; },
  get abortsPending() { return abortsPending(); },
};
connect();
