// The user's focus in a headed browser: a press through DevTools activates the agent
// tab's window; the window the user was in gets the focus straight back.

import { agent } from "./state.js";

// A press sent through DevTools (mousePressed, touchStart, a tap) makes Chrome focus the
// tab's WebContents, and with it activate its window: the X input focus, and the user's
// typing, would move to the Agent Window. Nothing in the command can prevent it, so
// around such a command the window that has the focus (if it is another of this
// browser's) is noted and given the focus back as soon as Chrome reports the press's
// window focused, even a little after the command was answered (FOCUS_GRACE_MS). Agent
// tabs run with focus emulation (see `attach`), so their pages stay focused all along.
const FOCUS_GRACE_MS = 500;
const focusGuards = new Set(); // {user, agent, until, giving}

export function activates(method, params) {
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
export const tabWindows = new Map(); // attached tab id -> its window id

export function focusedWindowId() {
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

export async function keepingUserFocus(tabId, run) {
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
