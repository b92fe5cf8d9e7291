// Errors the daemon is answered with, and the check that keeps BrowserSkill off the
// pages it never touches (the browser's own, the Web Store).

import { restrictedReason } from "./lib.js";

export class OpError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

export async function checkAllowed(tabId) {
  let tab;
  try { tab = await chrome.tabs.get(tabId); } catch { throw new OpError("no_tab", `no tab ${tabId}`); }
  const why = restrictedReason(tab.pendingUrl || tab.url);
  if (why) throw new OpError("restricted", `BrowserSkill does not touch ${why} (${tab.pendingUrl || tab.url})`);
  return tab;
}

