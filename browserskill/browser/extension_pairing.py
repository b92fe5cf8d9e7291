"""Which browsers the extension listener trusts: pairing (docs/extension.md, "Pairing").

Invariant: a WebSocket is taken for a browser only when its handshake proves a secret
that the user set up once, by entering a pairing code from `bsk extension pair` in the
extension's options page; the pinned `Origin` alone proves nothing (any local process can
send it). Neither the secret nor the code ever crosses the wire: the daemon opens each
connection with a fresh nonce, and the extension answers with an HMAC over both sides'
nonces and its instance id, keyed by the secret (or, to pair, by the code, from which both
sides then derive the new secret). The daemon's welcome carries its own HMAC, so the
extension obeys only a daemon that holds the secret too.

A code is short-lived (5 minutes), good for one pairing, and one is pending at a time.
A wrong code costs the connection that sent it, never the owner's code: the listener
holds that connection `WRONG_CODE_DELAY_S` before refusing and closing it, and a
connection gets one try. With at most `admission.MAX_UNADMITTED` connections waiting at
once, a guesser makes ~64 tries a second, ~19,000 in a code's life, against 30^10 codes;
and no number of wrong tries can deny the owner the pairing. Secrets are kept per
browser instance in STATE_DIR/extension-pairings.json, 0600 from its creation.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from browserskill.base import paths

log = logging.getLogger(__name__)

CODE_TTL_S = 300.0
WRONG_CODE_DELAY_S = 1.0  # what a wrong code costs its connection, before the refusal
# No 0/O, 1/I/L, U: a code read off a terminal is typed back without doubt. 10 of these
# (~49 bits) for a code that lives 5 minutes.
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTVWXYZ23456789"
CODE_LENGTH = 10
NONCE = re.compile(r"[0-9a-f]{32,128}")
PROOF = re.compile(r"[0-9a-f]{64}")

# What each HMAC is for: never the same message for two purposes.
PAIR_HELLO = "bsk-pair-hello-v2"
PAIR_SECRET = "bsk-pair-secret-v2"
HELLO = "bsk-hello-v2"
WELCOME = "bsk-welcome-v2"


def mac(key: bytes, purpose: str, *parts: str) -> str:
    """HMAC-SHA256 over the purpose and the parts, one per line, as hex (extension/lib.js
    computes the same)."""
    return hmac.new(key, "\n".join((purpose, *parts)).encode(), hashlib.sha256).hexdigest()


def normalize_code(text: str) -> str:
    """A code as typed ('abcde-fghjk', with spaces) in its canonical form."""
    return re.sub(r"[\s-]", "", text).upper()


def new_code() -> str:
    raw = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
    return f"{raw[:5]}-{raw[5:]}"


class Refused(Exception):
    """A handshake the listener turns away; `code` tells the extension what to show."""

    def __init__(self, code: str, reason: str, *, wrong_code: bool = False) -> None:
        super().__init__(reason)
        self.code = code
        self.wrong_code = wrong_code  # a guess: the listener makes its connection pay


@dataclass
class PendingCode:
    code: str  # canonical form
    expires_at: float


class Pairings:
    """The paired browsers' secrets (on disk) and the one pending pairing code (in memory)."""

    def __init__(self, home: Path) -> None:
        self.path = home / "extension-pairings.json"
        self.pending: PendingCode | None = None
        self.browsers: dict[str, dict[str, Any]] = {}
        try:
            stored = json.loads(self.path.read_text())
            self.browsers = {k: v for k, v in stored.get("browsers", {}).items()
                             if isinstance(v, dict) and isinstance(v.get("secret"), str)}
        except FileNotFoundError:
            pass
        except (OSError, ValueError, AttributeError) as e:
            log.warning("ignoring unreadable %s (%s): browsers must pair again", self.path, e)

    def new_code(self) -> dict[str, Any]:
        """A fresh pairing code; the one pending before it is void."""
        code = new_code()
        self.pending = PendingCode(normalize_code(code), time.time() + CODE_TTL_S)
        return {"code": code, "expires_at": self.pending.expires_at, "ttl_s": CODE_TTL_S}

    def verify(self, hello: dict[str, Any], server_nonce: str) -> tuple[bytes, bool]:
        """The secret a handshake proves, and whether it was just paired; or `Refused`."""
        instance = hello["instance_id"]
        pair, auth = hello.get("pair"), hello.get("auth")
        if isinstance(pair, dict):
            return self._pair(instance, pair, server_nonce), True
        entry = self.browsers.get(instance)
        if entry is None:
            raise Refused("not_paired", "this browser is not paired with the daemon: run "
                          "`bsk extension pair` and enter the code in the extension's "
                          "options page")
        nonce, proof = _nonce_and_proof(auth)
        secret = bytes.fromhex(entry["secret"])
        if not hmac.compare_digest(proof, mac(secret, HELLO, server_nonce, nonce, instance)):
            raise Refused("bad_secret", "the pairing secret does not match this daemon's "
                          "(paired with another daemon, or unpaired here): run `bsk "
                          "extension pair` and enter the code in the extension's options page")
        return secret, False

    def _pair(self, instance: str, pair: dict[str, Any], server_nonce: str) -> bytes:
        nonce, proof = _nonce_and_proof(pair)
        pending = self.pending
        if pending is None or time.time() > pending.expires_at:
            self.pending = None
            raise Refused("bad_code", "no pairing code is pending (it expired after "
                          f"{CODE_TTL_S / 60:g} minutes, or was used): run `bsk extension "
                          "pair` again")
        key = pending.code.encode()
        if not hmac.compare_digest(proof, mac(key, PAIR_HELLO, server_nonce, nonce, instance)):
            raise Refused("bad_code", "wrong pairing code: check it and try again",
                          wrong_code=True)
        self.pending = None  # good for one pairing
        return bytes.fromhex(mac(key, PAIR_SECRET, server_nonce, nonce, instance))

    def add(self, instance_id: str, secret: bytes, info: dict[str, Any]) -> None:
        self.browsers[instance_id] = {"secret": secret.hex(), "paired_at": time.time(),
                                      **info}
        self._save()

    def remove(self, instance_id: str) -> bool:
        if self.browsers.pop(instance_id, None) is None:
            return False
        self._save()
        return True

    def info(self) -> list[dict[str, Any]]:
        """The paired browsers, without their secrets."""
        return [{"browser_id": k, **{f: v for f, v in e.items() if f != "secret"}}
                for k, e in sorted(self.browsers.items())]

    def _save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = paths.open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "w") as f:
            json.dump({"browsers": self.browsers}, f, indent=1)
        os.replace(tmp, self.path)


def welcome_proof(secret: bytes, server_nonce: str, hello: dict[str, Any]) -> str:
    """The daemon's side: it holds the secret too (the extension checks this)."""
    nonce = (hello.get("pair") or hello.get("auth") or {})["nonce"]
    return mac(secret, WELCOME, server_nonce, nonce, hello["instance_id"])


def _nonce_and_proof(part: Any) -> tuple[str, str]:
    if not isinstance(part, dict):
        raise Refused("bad_handshake", "the handshake carries no pairing proof (auth)")
    nonce, proof = part.get("nonce"), part.get("proof")
    if not isinstance(nonce, str) or not NONCE.fullmatch(nonce):
        raise Refused("bad_handshake", "nonce must be 32-128 lowercase hex digits")
    if not isinstance(proof, str) or not PROOF.fullmatch(proof):
        raise Refused("bad_handshake", "proof must be 64 lowercase hex digits")
    return nonce, proof
