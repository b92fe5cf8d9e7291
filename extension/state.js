// The extension's memory of sessions: each session's Agent Window, the user tabs it
// borrowed, and agent tabs that carry an overlay outside an Agent Window. Mirrored to
// chrome.storage.session, so a restarted worker (MV3 idles them) still knows them.
// Other modules read these objects and change their entries; only `restore` replaces them.

// session id -> {label, windowId}; tab id -> session id for borrowed tabs.
export let agent = {};
export let borrowed = {};
// tab id -> {session_id, label}: agent tabs outside an Agent Window (a popup window the
// agent's page opened), so their overlay comes back after each navigation too.
export let overlaid = {};
let ready = null;

export function restore() {
  ready ??= chrome.storage.session.get(["agent", "borrowed", "overlaid"]).then((s) => {
    agent = s.agent || {};
    borrowed = s.borrowed || {};
    overlaid = s.overlaid || {};
  });
  return ready;
}

export function save() {
  return chrome.storage.session.set({ agent, borrowed, overlaid });
}


export async function openAgentSessions() {
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
export async function reconcile(live) {
  await restore();
  const keep = new Set(live);
  for (const sid of Object.keys(agent)) if (!keep.has(sid)) delete agent[sid];
  for (const [tabId, sid] of Object.entries(borrowed)) if (!keep.has(sid)) delete borrowed[tabId];
  await save();
}

