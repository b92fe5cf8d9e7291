import { test } from "node:test";
import assert from "node:assert/strict";
import { negotiate, backoffDelay, restrictedReason, validPort, BACKOFF_CAP_MS } from "../lib.js";

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
