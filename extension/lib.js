// Pure logic shared by the service worker and its tests (`node --test extension/test`).

// 2: the handshake proves pairing (a challenge, then an HMAC in the hello). 1 trusted
// the Origin header alone; a daemon speaking only 1 is refused.
export const PROTOCOL = 2; // the protocol this extension speaks
export const MIN_PROTOCOL = 2; // the oldest daemon protocol it still understands
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

// -- pairing (docs/extension.md, "Pairing"; the daemon's side: extension_pairing.py) ------
// Neither the pairing code nor the secret ever crosses the wire: each side proves it holds
// them with an HMAC over both sides' nonces and this browser's instance id.

export const PAIR_HELLO = "bsk-pair-hello-v2";
export const PAIR_SECRET = "bsk-pair-secret-v2";
export const HELLO = "bsk-hello-v2";
export const WELCOME = "bsk-welcome-v2";

// A code as the user typed it ("abcde-fghjk ", spaces, dashes) in its canonical form.
export function normalizeCode(text) {
  return String(text || "").replace(/[\s-]/g, "").toUpperCase();
}

export function toHex(bytes) {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

export function fromHex(hex) {
  if (typeof hex !== "string" || !/^([0-9a-f]{2})+$/.test(hex)) throw new Error("not hex");
  return Uint8Array.from(hex.match(/../g), (h) => parseInt(h, 16));
}

export function randomNonce() {
  return toHex(crypto.getRandomValues(new Uint8Array(16)));
}

// HMAC-SHA256 over the purpose and the parts, one per line, as hex (the daemon's `mac`).
export async function mac(keyBytes, purpose, ...parts) {
  const key = await crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" },
    false, ["sign"]);
  const data = new TextEncoder().encode([purpose, ...parts].join("\n"));
  return toHex(await crypto.subtle.sign("HMAC", key, data));
}

// What the hello carries to prove the pairing, and the secret the welcome must prove:
// with a pairing code, `pair` (and the secret both sides derive from the code); else with
// the stored secret, `auth`; with neither, nothing (the daemon then says "not paired").
export async function handshakeProof({ code, secretHex, serverNonce, instanceId,
  clientNonce = randomNonce() }) {
  if (code) {
    const key = new TextEncoder().encode(normalizeCode(code));
    return {
      field: "pair",
      part: { nonce: clientNonce, proof: await mac(key, PAIR_HELLO, serverNonce, clientNonce, instanceId) },
      secretHex: await mac(key, PAIR_SECRET, serverNonce, clientNonce, instanceId),
    };
  }
  if (typeof secretHex === "string" && /^[0-9a-f]{64}$/.test(secretHex)) { // else: unpaired
    return {
      field: "auth",
      part: { nonce: clientNonce, proof: await mac(fromHex(secretHex), HELLO, serverNonce, clientNonce, instanceId) },
      secretHex,
    };
  }
  return { field: null, part: null, secretHex: null };
}

// Whether the daemon's welcome proves it holds the same secret.
export async function welcomeProved(secretHex, proof, serverNonce, clientNonce, instanceId) {
  if (!secretHex || typeof proof !== "string") return false;
  return proof === await mac(fromHex(secretHex), WELCOME, serverNonce, clientNonce, instanceId);
}
