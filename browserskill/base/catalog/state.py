"""State: cookies, an origin's storage, and all of it saved to or loaded from a storageState file.

Each tool's spec, the params its handler reads (a TypedDict in `PARAMS`, kept equal to the
spec by tests/test_catalog.py) and its text renderer (what the CLI prints and the MCP
server sends), side by side.
"""

from __future__ import annotations

from typing import TypedDict

from browserskill.base.catalog.params import M, NoParams, R
from browserskill.base.catalog.spec import Param, ToolSpec
from browserskill.base.catalog.text import SCOPE, short

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.catalog.text import Renderer, Words

_COOKIE_URL = Param("url", "string", "the cookies a request to this URL would send",
                    max_length=8192)
_SESSION_STORAGE = Param("session_storage", "boolean", "sessionStorage instead of "
                         "localStorage", default=False)
_KEY = Param("name", "string", "the storage key", required=True, positional=True,
             max_length=10_000, blank_ok=True)
_STATE_NOTE = ("Cookies are the session's browser context's: its own with `session start "
               "--isolated`, else the shared profile's, which every non-isolated session "
               "sees too.")

# The MCP capability group its tools are in (`bsk mcp --caps`).
CAPABILITY = "state"

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("cookies_list", ("cookies", "list"), R,
             "List cookies, HttpOnly ones included. " + _STATE_NOTE, (_COOKIE_URL,),
             example="bsk cookies list --url https://example.com/"),
    ToolSpec(
        "cookies_set", ("cookies", "set"), M,
        "Set a cookie for --url, or --domain and --path; with neither, for the current "
        "tab's page. " + _STATE_NOTE,
        (Param("name", "string", "cookie name", required=True, positional=True,
               max_length=4096),
         Param("value", "string", "cookie value", required=True, positional=True,
               max_length=4096, blank_ok=True),
         Param("url", "string", "the URL it belongs to (sets domain, path, secure)",
               max_length=8192),
         Param("domain", "string", "its domain (a leading dot includes subdomains)",
               max_length=255),
         Param("path", "string", "its path (default /)", max_length=4096),
         Param("http_only", "boolean", "hidden from page script", default=False),
         Param("secure", "boolean", "sent over https only", default=False),
         Param("same_site", "string", "SameSite policy", choices=("Strict", "Lax", "None")),
         Param("expires", "number", "expiry, seconds since the epoch (default: a session "
               "cookie)", minimum=0, maximum=253_402_300_799)),
        example="bsk cookies set theme dark --url https://example.com/",
    ),
    ToolSpec("cookies_delete", ("cookies", "delete"), M,
             "Delete the cookies named NAME (all of them, or those of --url, or of --domain "
             "and --path).",
             (Param("name", "string", "cookie name", required=True, positional=True,
                    max_length=4096),
              Param("url", "string", "only the one a request to this URL would send",
                    max_length=8192),
              Param("domain", "string", "only those of this domain", max_length=255),
              Param("path", "string", "only those of this path", max_length=4096)),
             example="bsk cookies delete sid --domain example.com"),
    ToolSpec("cookies_clear", ("cookies", "clear"), M,
             "Delete every cookie of the session's browser context. In the shared profile "
             "that is every non-isolated session's cookies."),
    ToolSpec("storage_list", ("storage", "list"), R,
             "List the current tab's origin's localStorage (or --session-storage).",
             (_SESSION_STORAGE,), example="bsk storage list"),
    ToolSpec("storage_get", ("storage", "get"), R,
             "Read one key of the current tab's origin's storage (not set: action_failed).",
             (_KEY, _SESSION_STORAGE), example="bsk storage get token"),
    ToolSpec("storage_set", ("storage", "set"), M,
             "Set a key in the current tab's origin's storage (pages already open see it "
             "on their next read).",
             (_KEY, Param("value", "string", "the value", required=True, positional=True,
                          max_length=5_000_000, blank_ok=True), _SESSION_STORAGE),
             example="bsk storage set theme dark"),
    ToolSpec("storage_delete", ("storage", "delete"), M,
             "Remove a key from the current tab's origin's storage.",
             (_KEY, _SESSION_STORAGE), example="bsk storage delete token"),
    ToolSpec("storage_clear", ("storage", "clear"), M,
             "Remove every key of the current tab's origin's storage.", (_SESSION_STORAGE,)),
    ToolSpec(
        "state_save", ("state", "save"), R,
        "Save the session's cookies and the localStorage of every web origin its pages "
        "have been on (or that it loaded) to PATH, in Playwright's storageState JSON "
        "(written 0600: it holds credentials).",
        (Param("path", "string", "file to write", required=True, positional=True,
               path=True),),
        example="bsk state save login.json",
    ),
    ToolSpec(
        "state_load", ("state", "load"), M,
        "Load cookies and localStorage from a storageState JSON file (bsk's or "
        "Playwright's) into the session. A new isolated session can start from one too "
        "(session start with --isolated --state FILE).",
        (Param("path", "string", "storageState file to read", required=True,
               positional=True, path=True),),
        example="bsk state load login.json",
    ),
)


class CookiesListParams(TypedDict):
    url: str | None


class CookiesSetParams(TypedDict):
    name: str
    value: str
    url: str | None
    domain: str | None
    path: str | None
    http_only: bool
    secure: bool
    same_site: str | None
    expires: float | None


class CookiesDeleteParams(TypedDict):
    name: str
    url: str | None
    domain: str | None
    path: str | None


class StorageAreaParams(TypedDict):
    """storage list, storage clear."""

    session_storage: bool


class StorageKeyParams(TypedDict):
    """storage get, storage delete."""

    name: str
    session_storage: bool


class StorageSetParams(TypedDict):
    name: str
    value: str
    session_storage: bool


class StateFileParams(TypedDict):
    """state save, state load."""

    path: str


PARAMS: dict[str, type] = {"cookies_list": CookiesListParams, "cookies_set": CookiesSetParams,
                           "cookies_delete": CookiesDeleteParams, "cookies_clear": NoParams,
                           "storage_list": StorageAreaParams, "storage_clear": StorageAreaParams,
                           "storage_get": StorageKeyParams, "storage_delete": StorageKeyParams,
                           "storage_set": StorageSetParams, "state_save": StateFileParams,
                           "state_load": StateFileParams}


def _cookies(r: dict[str, Any]) -> str:
    rows = []
    for c in r.get("cookies", []):
        flags = [f for f, on in (("HttpOnly", c.get("httpOnly")), ("Secure", c.get("secure")))
                 if on] + [f"SameSite={c.get('sameSite')}"]
        expires = "session" if c.get("expires", -1) < 0 else f"expires {c['expires']:.0f}"
        rows.append(f"{c['name']}={short(c['value'], 60)[1:-1]}  {c['domain']}{c['path']}  "
                    f"{expires}  {' '.join(flags)}")
    return "\n".join(rows) or f"(no cookies in {SCOPE.get(r.get('scope', ''), 'its context')})"


def _storage_list(r: dict[str, Any]) -> str:
    head = f"{r['area']} of {r['origin']}"
    rows = [f"{it['name']} = {short(it['value'])}" for it in r.get("items", [])]
    return "\n".join([head, *rows]) if rows else f"{head}: empty"


def _state_saved(r: dict[str, Any]) -> str:
    origins = ", ".join(r["origins"]) or "no origin with localStorage"
    return f"saved {r['cookies']} cookies and the storage of {origins} to {r['path']} (0600)"


def _state_loaded(r: dict[str, Any]) -> str:
    origins = ", ".join(r["origins"]) or "no origins"
    return f"loaded {r['cookies']} cookies and the storage of {origins}; {r['note']}"


RENDERERS: dict[Words, Renderer] = {
    ("cookies", "list"): _cookies,
    ("cookies", "set"): lambda r: f"set cookie {r['set']} for {r['where']} "
                                  f"({SCOPE[r['scope']]})",
    ("cookies", "delete"): lambda r: f"deleted {r['deleted']} cookie"
                                     f"{'' if r['deleted'] == 1 else 's'} named {r['name']}",
    ("cookies", "clear"): lambda r: f"cleared {r['cleared']} cookie"
                                    f"{'' if r['cleared'] == 1 else 's'} ({SCOPE[r['scope']]})",
    ("storage", "list"): _storage_list,
    ("storage", "get"): lambda r: str(r["value"]),
    ("storage", "set"): lambda r: f"set {r['key']} in {r['area']} of {r['origin']}",
    ("storage", "delete"): lambda r: (f"deleted {r['key']}" if r.get("deleted") else
                                      f"{r['key']} was not set") + f" ({r['area']} of "
                                                                   f"{r['origin']})",
    ("storage", "clear"): lambda r: f"cleared {r['cleared']} key"
                                    f"{'' if r['cleared'] == 1 else 's'} of {r['area']} of "
                                    f"{r['origin']}",
    ("state", "save"): _state_saved,
    ("state", "load"): _state_loaded,
}
