"""The request building, answer checking and retry rules both clients share."""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from browserskill.base import catalog, contract, paths
from browserskill.base.contract import DEFAULT_SESSION, CancelThenWait, new_op_id
from browserskill.base.controls import route
from browserskill.base.errors import CODES, BskError
from browserskill.client.results import (
    ERRORS,
    BrowserSkillError,
    ErrorInfo,
    error_from,
)


@dataclass
class _Request:
    method: str
    path: str
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    read_timeout: float = 60.0
    op_id: str | None = None  # a tool call names its operation up front
    session_id: str | None = None  # a tool call's
    tool: str | None = None


def session_start_body(session_id: str | None, label: str | None, isolated: bool,
                       state: str | None, browser: str | None, cdp_url: str | None = None,
                       grid: str | None = None, allow_domains: list[str] | None = None,
                       block_domains: list[str] | None = None) -> dict[str, Any]:
    """POST /v1/sessions's body (its fields: catalog.SESSION_START)."""
    body: dict[str, Any] = {k: v for k, v in (("session_id", session_id), ("label", label),
                                              ("browser", browser), ("cdp_url", cdp_url),
                                              ("grid", grid)) if v}
    if isolated:
        body["isolated"] = True
    if allow_domains:
        body["allow_domain"] = list(allow_domains)
    if block_domains:
        body["block_domain"] = list(block_domains)
    if state:
        body["state"] = os.path.abspath(os.path.expanduser(state))
    return body


@functools.lru_cache(maxsize=256)  # a client names the same few sessions and tools
def _q(value: str) -> str:
    return quote(value, safe="")


def _status_route(connect: bool) -> tuple[str, str]:
    method, path = route("status")
    return method, path + ("?connect=true" if connect else "")


def _answer(status: int, headers: Mapping[str, str], body: Any) -> dict[str, Any]:
    if isinstance(body, dict):
        return body
    return {"error": {"code": "internal", "message": f"unexpected answer (HTTP {status}): "
                                                      f"{str(body)[:200]}"}}


def _check(status: int, headers: Mapping[str, str], body: Any) -> dict[str, Any]:
    """The answer as a dict; raise its error class for any non-2xx answer."""
    answer = _answer(status, headers, body)
    if status >= 300:
        error = answer.get("error")
        info = ErrorInfo.from_dict(error if isinstance(error, dict) else {"code": "internal"})
        raise error_from(answer, info)
    return answer


def _should_retry(status: int, headers: Mapping[str, str]) -> bool:
    return status >= 300 and headers.get("x-should-retry") == "true"


def _retry_delay(headers: Mapping[str, str], cap: float) -> float:
    try:
        return min(max(float(headers.get("retry-after", "1")), 0.0), cap)
    except ValueError:
        return min(1.0, cap)


# Per-call options every tool method takes besides its parameters.
CALL_OPTIONS = ("session", "wait", "timeout", "key", "detach", "op_id")


class _Base:
    def __init__(
        self,
        socket: str | os.PathLike[str] | None = None,
        *,
        home: str | os.PathLike[str] | None = None,
        base_url: str | None = None,
        token: str | None = None,
        session: str | None = None,
        autostart: bool = True,
        retries: int = 2,
        retry_max_delay: float = 5.0,
    ) -> None:
        if base_url and (socket or home):
            raise ValueError("give base_url (TCP) or socket/home (Unix socket), not both")
        self.base_url = base_url
        self.home = Path(home).expanduser().resolve() if home else None
        self.socket = (None if base_url else
                       Path(socket) if socket else paths.socket_path(self.home))
        # Only a daemon this client knows how to start is started: the default home's, or
        # `home`'s — not one behind an arbitrary socket or URL.
        self.autostart = autostart and not base_url and (socket is None)
        self.session_id = session or os.environ.get("BSK_SESSION") or DEFAULT_SESSION
        self._first_session = self.session_id  # where it acts again once `use`d ones stop
        self.retries = retries
        self.retry_max_delay = retry_max_delay
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = self._transport()

    def _transport(self) -> Any:
        """The connection to the daemon (each client its own kind)."""
        raise NotImplementedError

    def _stopped(self, session_id: str | None) -> None:
        """After `session_stop`: a client whose session that was acts in its first again
        (the one it was made with), not in a session that is gone."""
        if (session_id or self.session_id) == self.session_id:
            self.session_id = self._first_session

    # -- building calls --------------------------------------------------------------------

    def _tool_request(self, tool: str, params: dict[str, Any] | None, *,
                      session: str | None, wait: bool, timeout: float | None,
                      key: str | None, detach: bool, op_id: str | None) -> _Request:
        body = dict(params or {})
        spec = catalog.BY_NAME.get(tool)
        if spec is None:  # said here: the daemon's 404 would name its HTTP routes
            close = difflib.get_close_matches(tool, [t.name for t in catalog.TOOLS
                                                     if not t.hidden], 3)
            raise ERRORS["invalid_params"](
                f"tool: unknown tool {tool!r}", details={"field": "tool"},
                hint=(f"did you mean {' or '.join(close)}? " if close else "")
                + "client.tools() lists them")
        if wait:
            body["wait"] = True
        if detach:
            body["detach"] = True
        if timeout is not None:
            try:  # as `bsk --timeout` is checked: seconds, not the wire's timeout_ms
                contract.check_timeout_s(str(timeout), tool,
                                         spec.timeout_range_s if spec else None)
            except BskError as e:
                raise ERRORS[e.code](e.message, hint=e.hint, details=e.details) from None
            body["timeout_ms"] = max(1, int(timeout * 1000))
        read_timeout = contract.wire_timeout_s(spec, params or {}, timeout)
        headers = {"X-Op-Id": op_id or new_op_id()}
        if key is not None:
            headers["Idempotency-Key"] = key
        sid = session or self.session_id
        return _Request("POST", f"/v1/sessions/{_q(sid)}/tools/{_q(tool)}", body, headers,
                        read_timeout, headers["X-Op-Id"], sid, tool)

    def _stop_request(self, session: str | None, wait: bool,
                      timeout: float | None) -> _Request:
        sid = session or self.session_id
        query = "?wait=true" if wait else ""
        body = {"timeout_ms": max(1, int(timeout * 1000))} if timeout else None
        method, path = route("session_stop", sid=sid)
        return _Request(method, path + query, body,
                        read_timeout=contract.wire_timeout_s(
                            catalog.BY_NAME.get("session_stop"), {}, timeout))

    @staticmethod
    def _wait_request(op_id: str, timeout: float) -> _Request:
        """GET /v1/ops/{id}/wait for up to `timeout` s, its answer awaited the margin
        longer (contract.WIRE_MARGIN_S, as any call's)."""
        ms = max(0, int(timeout * 1000))
        method, path = route("op_wait", op_id=op_id)
        return _Request(method, f"{path}?timeout_ms={ms}",
                        read_timeout=timeout + contract.WIRE_MARGIN_S)

    @staticmethod
    def _ops_query(session: str | None, limit: int) -> str:
        query: dict[str, Any] = {"limit": limit}
        if session:
            query["session"] = session
        return route("op_list")[1] + "?" + urlencode(query)

    def _unreachable(self, e: Exception) -> BrowserSkillError:
        where = self.base_url or str(self.socket)
        return ERRORS["browser_unavailable"](
            f"the daemon at {where} is not reachable: {e}",
            hint="start it with `bsk daemon start`" if not self.autostart
            else "see `bsk doctor`")

    @staticmethod
    def _recorded(plan: CancelThenWait, session_id: str | None, tool: str | None,
                  cancel_status: int, waited: tuple[int, Mapping[str, str], Any] | None,
                  ) -> tuple[int, Mapping[str, str], Any] | None:
        """How a call we stopped waiting for ended, as the daemon recorded it (the answer
        the call itself would have had); None while the daemon can't say."""
        if cancel_status == 404:  # it never arrived: nothing reached the browser
            answer = plan.never_arrived(session_id, tool)
            return CODES["cancelled"].http, {}, answer
        if waited is None:
            return None
        status, headers, body = waited
        if status == 202 or not isinstance(body, dict) or body.get("state") != "ended":
            return None  # still running after the cancel's grace: unknown it stays
        return status, headers, body

    @staticmethod
    def _lost(e: Exception, req: _Request) -> BrowserSkillError:
        """The request went out and no answer came back: the effect is unknown."""
        if req.op_id is None:
            return ERRORS["browser_unavailable"](f"lost the daemon mid-call: {e}")
        return ERRORS["outcome_unknown"](
            f"no answer from the daemon for {req.op_id}: {e}", op_id=req.op_id,
            dispatched="unknown",
            hint=f"`bsk op show {req.op_id}` says whether it ran; inspect before acting again")


def _spawn_error(e: Exception) -> BrowserSkillError:
    return ERRORS["browser_unavailable"](f"could not start the daemon: {e}",
                                         hint="run `bsk doctor` for what to fix")


# -- the blocking client ------------------------------------------------------------------
