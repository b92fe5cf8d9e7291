import { test } from "node:test";
import assert from "node:assert/strict";
import {
  negotiate, backoffDelay, restrictedReason, validPort, BACKOFF_CAP_MS,
  handshakeProof, normalizeCode, welcomeProved,
} from "../lib.js";

test("protocol ranges: highest common version, or none", () => {
  assert.equal(negotiate({ min: 1, max: 1 }, { min: 1, max: 1 }), 1);
  assert.equal(negotiate({ min: 1, max: 3 }, { min: 2, max: 5 }), 3);
  assert.equal(negotiate({ min: 1, max: 1 }, { min: 2, max: 2 }), null);
});

test("backoff doubles and is capped", () => {
  const fixed = () => 1;
  assert.equal(backoffDelay(0, fixed), 250);
  assert.equal(backoffDelay(1, fixed), 500);
  assert.equal(backoffDelay(30, fixed), BACKOFF_CAP_MS);
  assert.ok(backoffDelay(30, () => 0) >= BACKOFF_CAP_MS * 0.8);
});

test("restricted pages", () => {
  assert.match(restrictedReason("chrome://settings"), /browser page/);
  assert.match(restrictedReason("chrome-extension://abc/popup.html"), /another extension/);
  assert.match(restrictedReason("https://chromewebstore.google.com/detail/x"), /store/);
  assert.match(restrictedReason("https://chrome.google.com/webstore/detail/x"), /store/);
  assert.equal(restrictedReason("https://chrome.google.com/search"), null);
  assert.equal(restrictedReason("http://127.0.0.1:8000/"), null);
  assert.equal(restrictedReason("about:blank"), null);
});

test("ports", () => {
  assert.equal(validPort("47800"), 47800);
  assert.equal(validPort("0"), null);
  assert.equal(validPort("x"), null);
});

// The same figures as browserskill/browser/extension_pairing.py computes (checked in
// Python): the daemon and the extension must agree byte for byte.
const SN = "00112233445566778899aabbccddeeff";
const CN = "ffeeddccbbaa99887766554433221100";
const SECRET = "6d02efdd0794e08619d190bea851f0767e05582d99dbff868369979ad98b2b52";

test("pairing with a code: the proof and the derived secret match the daemon's", async () => {
  assert.equal(normalizeCode(" abcde-fghjk\n"), "ABCDEFGHJK");
  const got = await handshakeProof({ code: "abcde-fghjk", serverNonce: SN, instanceId: "inst-1", clientNonce: CN });
  assert.equal(got.field, "pair");
  assert.deepEqual(got.part, { nonce: CN, proof: "90fb870121d4b6209881b9845b2a712fe58190be6c83e3e104216c584da7f023" });
  assert.equal(got.secretHex, SECRET);
});

test("a paired browser proves its secret; the welcome proves the daemon's", async () => {
  const got = await handshakeProof({ secretHex: SECRET, serverNonce: SN, instanceId: "inst-1", clientNonce: CN });
  assert.equal(got.field, "auth");
  assert.equal(got.part.proof, "b5846851fedd4e35cb1c324474f4a6a1e58734945914e39f544a5327252690a2");
  const welcome = "595ad09f54b3cee761de52b4d8600eb792d0be35a7b70f7fe348de50c44f423d";
  assert.equal(await welcomeProved(SECRET, welcome, SN, CN, "inst-1"), true);
  assert.equal(await welcomeProved(SECRET, welcome, SN, CN, "inst-2"), false);
  assert.equal(await welcomeProved(SECRET, undefined, SN, CN, "inst-1"), false);
  assert.equal(await welcomeProved(null, welcome, SN, CN, "inst-1"), false);
});

test("unpaired, or a stored secret that is not one: nothing to prove", async () => {
  for (const secretHex of [undefined, "", "zz", SECRET.slice(2), 42]) {
    const got = await handshakeProof({ secretHex, serverNonce: SN, instanceId: "inst-1" });
    assert.equal(got.field, null);
  }
});
