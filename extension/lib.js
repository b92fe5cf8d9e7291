// Pure logic shared by the service worker and its tests (`node --test extension/test`).

export const PROTOCOL = 1; // the protocol this extension speaks
export const MIN_PROTOCOL = 1; // the oldest daemon protocol it still understands
export const DEFAULT_PORT = 47800;
export const HEARTBEAT_MS = 10_000;
export const BACKOFF_FIRST_MS = 250;
export const BACKOFF_CAP_MS = 5_000;

// Compatibility rule: both sides speak a range [min, max] of integer protocol versions;
// they talk with the highest version in both ranges, or not at all.
export function negotiate(ours, theirs) {
  const lo = Math.max(ours.min, theirs.min);
  const hi = Math.min(ours.max, theirs.max);
  return lo <= hi ? hi : null;
}

// Reconnect delay after `failures` failed attempts in a row: doubling, capped, with a
// little jitter so several browsers don't hammer a restarting daemon in step.
export function backoffDelay(failures, random = Math.random) {
  const base = Math.min(BACKOFF_CAP_MS, BACKOFF_FIRST_MS * 2 ** Math.max(0, failures));
  return Math.round(base * (0.8 + 0.2 * random()));
}

const RESTRICTED_SCHEMES = ["chrome:", "chrome-extension:", "chrome-untrusted:", "devtools:",
  "edge:", "extension:", "view-source:", "chrome-search:", "brave:", "opera:", "vivaldi:"];
const STORE_HOSTS = [
  ["chromewebstore.google.com", "/"],
  ["chrome.google.com", "/webstore"],
  ["microsoftedge.microsoft.com", "/addons"],
];

// Why the extension must not touch a page at this URL, or null when it may.
export function restrictedReason(url) {
  if (!url) return null;
  let parsed;
  try { parsed = new URL(url); } catch { return null; }
  if (RESTRICTED_SCHEMES.includes(parsed.protocol)) {
    return parsed.protocol === "chrome-extension:" || parsed.protocol === "extension:"
      ? "another extension's page" : `a browser page (${parsed.protocol})`;
  }
  for (const [host, prefix] of STORE_HOSTS) {
    if (parsed.hostname === host && parsed.pathname.startsWith(prefix)) return "the extension store";
  }
  return null;
}

export function validPort(value) {
  const n = Number(value);
  return Number.isInteger(n) && n >= 1 && n <= 65535 ? n : null;
}
