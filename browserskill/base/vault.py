"""Named secrets the model never sees (docs/safety.md, "Secrets").

`bsk secret set NAME --origin URL` stores a value under a name; `fill REF --secret NAME`
and `type --secret NAME` use it by name, so the agent never holds it. This module is the
store and the one redaction rule every writer of text applies.

Invariants:
- The store (`vault.enc`) is AES-GCM ciphertext of one JSON object; the key is another
  file (`vault.key`, or `$BSK_VAULT_KEY`), both 0600, written whole (temp file + rename)
  under a lock. Only the CLI's `secret` commands write them; the daemon only reads.
- A value is used only where a secret's origins allow it (`allows`): the origin of the
  frame holding the field, never only the top page's.
- `scrub` / `scrub_bytes` replace every known value — as typed, URL-encoded (a form POST
  body), JSON- and HTML-escaped — with `contract.SECRET_MASK` in whatever the daemon
  answers, journals, logs or writes (results, errors, HAR, saved bodies). They cost a
  `stat` when there is no vault, and `cryptography` is imported only when there is one
  (the CLI's hot path never imports this module: tests/test_cli_startup.py).
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import os
import time
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

from browserskill.base import paths
from browserskill.base.contract import SECRET_MASK, Dispatched
from browserskill.base.errors import BskError, invalid

STORE_FILE = "vault.enc"
KEY_FILE = "vault.key"
_MAGIC = b"bsk-vault-1\n"
_AAD = b"browserskill vault v1"
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
NAME_MAX = 64
VALUE_MIN = 4  # shorter ones would be masked wherever those characters happen to appear
VALUE_MAX = 10_000  # what `type` takes


def store_path(home: str | None = None) -> str:
    return os.path.join(home or paths.state_dir_name(), STORE_FILE)


def key_path(home: str | None = None) -> str:
    """`$BSK_VAULT_KEY` (a file elsewhere: another disk, a tmpfs), else beside the store."""
    return os.environ.get("BSK_VAULT_KEY") or os.path.join(
        home or paths.state_dir_name(), KEY_FILE)


def check_name(name: str) -> str:
    if not name or len(name) > NAME_MAX or not set(name) <= NAME_CHARS:
        raise invalid("secret", f"{name!r} is not a secret name (1-{NAME_MAX} letters, "
                      "digits, '_', '.', '-')", hint="e.g. bsk secret set shop_password "
                      "--origin https://shop.example")
    return name


def origin_of(url: str) -> str:
    """The origin (scheme://host[:port]) of a URL or origin; a default port is dropped."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise invalid("origin", f"{url!r} is not an http(s) origin",
                      hint="e.g. --origin https://shop.example (a port if it has one)")
    try:
        port = parts.port
    except ValueError:
        raise invalid("origin", f"{url!r} has a bad port") from None
    host = parts.hostname
    if ":" in host:
        host = f"[{host}]"
    if port is None or (scheme, port) in (("http", 80), ("https", 443)):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


# -- the store ----------------------------------------------------------------------------


def _aesgcm(key: bytes) -> Any:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # only when used

    return AESGCM(key)


def _write_private(path: str, data: bytes) -> None:
    """`path` replaced whole by `data`, 0600 from its creation."""
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _read_key(home: str | None, create: bool) -> bytes | None:
    path = key_path(home)
    try:
        with open(path, "rb") as f:
            key = base64.b64decode(f.read().strip(), validate=True)
    except FileNotFoundError:
        if not create:
            return None
        key = os.urandom(32)
        _write_private(path, base64.b64encode(key) + b"\n")
        return key
    except ValueError:
        raise _broken(f"the vault's key file {path} is not a key") from None
    if len(key) != 32:
        raise _broken(f"the vault's key file {path} is not a 256-bit key")
    return key


def _broken(message: str) -> BskError:
    return BskError("invalid_params", message, hint="`bsk secret delete --all` starts a new, "
                    "empty vault (then set the secrets again)", details={"field": "secret"})


def load(home: str | None = None) -> dict[str, dict[str, Any]]:
    """Every secret: name -> {"value", "origins", "set_at"}; {} when there is no store."""
    try:
        with open(store_path(home), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return {}
    key = _read_key(home, create=False)
    if key is None:
        raise _broken(f"the vault {store_path(home)} is there but its key "
                      f"{key_path(home)} is not: its secrets can't be read")
    if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 12 + 16:
        raise _broken(f"{store_path(home)} is not a bsk vault")
    nonce, sealed = data[len(_MAGIC):len(_MAGIC) + 12], data[len(_MAGIC) + 12:]
    try:
        plain = _aesgcm(key).decrypt(nonce, sealed, _AAD)
    except Exception:  # cryptography's InvalidTag: another key, or a changed file
        raise _broken(f"the vault {store_path(home)} does not open with the key "
                      f"{key_path(home)} (another key, or a damaged file)") from None
    entries = json.loads(plain)
    return entries if isinstance(entries, dict) else {}


def _save(entries: dict[str, dict[str, Any]], home: str | None) -> None:
    key = _read_key(home, create=True)
    assert key is not None
    nonce = os.urandom(12)
    plain = json.dumps(entries, ensure_ascii=False).encode()
    _write_private(store_path(home), _MAGIC + nonce + _aesgcm(key).encrypt(nonce, plain, _AAD))


@contextlib.contextmanager
def _locked(home: str | None) -> Any:
    """One writer at a time (two `secret set` at once must not lose one)."""
    import fcntl

    directory = home or paths.state_dir_name()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd = os.open(os.path.join(directory, "vault.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def set_secret(name: str, value: str, origins: list[str], home: str | None = None) -> dict[
        str, Any]:
    """Store (or replace, value and origins together) a secret; what `secret list` says."""
    check_name(name)
    if not origins:
        raise invalid("origin", "a secret needs at least one --origin it may be used on",
                      hint="bsk secret set NAME --origin https://site.example")
    allowed = sorted({origin_of(o) for o in origins})
    if len(value) < VALUE_MIN or len(value) > VALUE_MAX:
        raise invalid("value", f"a secret's value is {VALUE_MIN}-{VALUE_MAX} characters "
                      f"(got {len(value)})")
    if "\n" in value or "\r" in value:
        raise invalid("value", "a secret's value is one line")
    with _locked(home):
        entries = load(home)
        entries[name] = {"value": value, "origins": allowed, "set_at": time.time()}
        _save(entries, home)
    return {"name": name, "origins": allowed}


def delete(name: str, home: str | None = None) -> bool:
    check_name(name)
    with _locked(home):
        entries = load(home)
        if entries.pop(name, None) is None:
            return False
        _save(entries, home)
    return True


def delete_all(home: str | None = None) -> None:
    """Forget every secret and the key (also the way out of a vault that won't open)."""
    with _locked(home):
        for path in (store_path(home), key_path(home)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def listing(home: str | None = None) -> list[dict[str, Any]]:
    """Names and origins, never values."""
    return [{"name": name, "origins": e["origins"],
             "set_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(e["set_at"]))}
            for name, e in sorted(load(home).items())]


def lookup(name: str, home: str | None = None) -> tuple[str, list[str]]:
    """(value, origins) of a secret, or `invalid_params` naming what to do."""
    check_name(name)
    entry = load(home).get(name)
    if entry is None:
        raise BskError("invalid_params", f"secret: no secret named {name!r}",
                       hint=f"a person stores it first: bsk secret set {name} --origin URL "
                            "(`bsk secret list` names the ones there are)",
                       details={"field": "secret", "secret": name})
    return entry["value"], list(entry["origins"])


def mismatch(name: str, origin: str, origins: list[str]) -> BskError:
    """The refusal of a secret on a frame whose origin it is not bound to."""
    return BskError(
        "action_failed", f"secret {name!r} is not for {origin or 'this frame'}: it may be "
        f"used only on {', '.join(origins)}; nothing was sent",
        hint="check that the page is the site you meant (a look-alike address, or a frame "
             "of another site, is refused); a person adds an origin with `bsk secret set`",
        details={"reason": "secret_origin_mismatch", "secret": name, "origin": origin,
                 "allowed": origins}, dispatched=Dispatched.NO)


# -- redaction ----------------------------------------------------------------------------

_known: dict[str, tuple[tuple[int, int, int], tuple[str, ...]]] = {}
_store_of: dict[str | None, str] = {}  # BSK_HOME -> the store's path (realpath costs µs)


def _forms(value: str) -> set[str]:
    """The ways a value shows up in text bsk writes: as typed, in a form or URL, JSON."""
    return {value, quote_plus(value), quote(value, safe=""), quote(value),
            json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1],
            html.escape(value)}


def known_forms() -> tuple[str, ...]:
    """Every form of every stored value, longest first; cached until the store changes
    (one `stat` per call)."""
    env = os.environ.get("BSK_HOME")
    path = _store_of.get(env)
    if path is None:
        path = _store_of[env] = store_path()
    try:
        st = os.stat(path)
    except OSError:
        _known.pop(path, None)
        return ()
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    held = _known.get(path)
    if held is not None and held[0] == stamp:
        return held[1]
    try:
        values = [e["value"] for e in load().values()]
    except BskError:
        values = []
    forms = tuple(sorted({f for v in values for f in _forms(v) if f}, key=len, reverse=True))
    _known[path] = (stamp, forms)
    return forms


def scrub_text(text: str, forms: tuple[str, ...] | None = None) -> str:
    # `in` and `replace` per form: far faster than one regex alternation over big text.
    for form in known_forms() if forms is None else forms:
        if form in text:
            text = text.replace(form, SECRET_MASK)
    return text


def scrub(obj: Any) -> Any:
    """`obj` (JSON data) with every known value masked; `obj` itself when none is in it
    (told by a search of its JSON text: most answers hold none)."""
    forms = known_forms()
    if not forms:
        return obj
    text = json.dumps(obj, ensure_ascii=False, default=str)
    if not any(form in text for form in forms):
        return obj
    return _scrub(obj, forms)


def _scrub(obj: Any, forms: tuple[str, ...]) -> Any:
    if isinstance(obj, str):
        return scrub_text(obj, forms)
    if isinstance(obj, dict):
        return {_scrub(k, forms): _scrub(v, forms) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_scrub(v, forms) for v in obj]
    return obj


def scrub_bytes(data: bytes) -> bytes:
    """Bytes bsk writes to a file (a body, a HAR) with every known value masked."""
    for form in known_forms():
        encoded = form.encode()
        if encoded in data:
            data = data.replace(encoded, SECRET_MASK.encode())
    return data


def name_of(value: str) -> str | None:
    """The secret whose value this is (a recording writes `--secret NAME` instead)."""
    if not value or not known_forms():
        return None
    with contextlib.suppress(BskError):
        for name, entry in load().items():
            if entry["value"] == value:
                return name
    return None
