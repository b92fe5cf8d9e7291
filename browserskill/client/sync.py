"""`Client`: the blocking client."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from browserskill.base.contract import CANCEL_GRACE_S, CANCEL_POLL_S, CancelThenWait
from browserskill.base.controls import route
from browserskill.client.core import (
    _Base,
    _check,
    _q,
    _Request,
    _retry_delay,
    _should_retry,
    _spawn_error,
    _status_route,
    session_start_body,
)
from browserskill.client.http11 import BlockingHttp11, Lost, Unreachable
from browserskill.client.results import (
    Result,
    Session,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # the methods made at import (client/methods.py), spelled for checkers
    from browserskill.client.generated import ClientMethods
else:
    ClientMethods = object


class Client(_Base, ClientMethods):
    """Blocking client. `Client()` talks to the daemon of `BSK_HOME` (starting it if needed);
    `Client(home=DIR)` to another state dir's; `Client(base_url=URL, token=T)` over TCP."""

    _http: BlockingHttp11

    def _transport(self) -> BlockingHttp11:
        # The asyncio client's keep-alive HTTP/1.1 (client/http11.py), blocking: one
        # framing (browserskill/base/http1.py) for the CLI and both clients.
        return BlockingHttp11(socket=None if self.base_url else str(self.socket),
                              base_url=self.base_url, headers=self._headers)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing --------------------------------------------------------------------------

    def _send(self, req: _Request) -> tuple[int, Mapping[str, str], Any]:
        started = False
        for attempt in (0, 1):
            try:
                return self._http.request(req.method, req.path, req.body,
                                          headers=req.headers, timeout=req.read_timeout)
            except Unreachable as e:
                if attempt or not self.autostart or started:
                    raise self._unreachable(e) from None
                self._start_daemon()
                started = True
            except Lost as e:
                recorded = self._ended_as_recorded(req)
                if recorded is not None:
                    return recorded
                raise self._lost(e, req) from None
        raise AssertionError("unreachable")

    def _ended_as_recorded(self, req: _Request) -> tuple[int, Mapping[str, str], Any] | None:
        """We stopped waiting for our call's answer: cancel it by its id, then take how
        the daemon recorded its end (contract.CancelThenWait) rather than guess."""
        if req.op_id is None:
            return None
        plan = CancelThenWait(req.op_id, time.monotonic(), _q)
        waited = None
        try:
            while plan.again(status := self._http.request(
                    "POST", plan.cancel_path, timeout=CANCEL_GRACE_S)[0], time.monotonic()):
                time.sleep(CANCEL_POLL_S)  # the call is still on its way
            if status != 404:
                waited = self._http.request("GET", plan.wait_path, timeout=CANCEL_GRACE_S + 5)
        except (Lost, Unreachable):
            return None
        return self._recorded(plan, req.session_id, req.tool, status, waited)

    def _start_daemon(self) -> None:
        from browserskill.daemon.spawn import DaemonStartError, spawn

        try:
            spawn(home=self.home)
        except DaemonStartError as e:
            raise _spawn_error(e) from None

    def _json(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        return _check(*self._send(_Request(method, path, body)))

    # -- tools -----------------------------------------------------------------------------

    def call(self, tool: str, params: dict[str, Any] | None = None, /, *,
             session: str | None = None, wait: bool = False, timeout: float | None = None,
             key: str | None = None, detach: bool = False, op_id: str | None = None,
             **kwparams: Any) -> Result:
        """Run any tool: `call("click", {"ref": "e3"})` or `call("click", ref="e3")`."""
        merged = {**(params or {}), **kwparams}
        for attempt in range(self.retries + 1):
            req = self._tool_request(tool, merged, session=session, wait=wait,
                                     timeout=timeout, key=key, detach=detach,
                                     op_id=op_id)
            try:
                status, headers, body = self._send(req)
            except KeyboardInterrupt:
                if tool != "batch":  # a batch's id names no operation: the hang-up (the
                    self._cancel_quietly(req.op_id)  # connection closed) cancels its step
                raise
            if attempt < self.retries and op_id is None and _should_retry(status, headers):
                time.sleep(_retry_delay(headers, self.retry_max_delay))
                continue
            return Result.from_dict(_check(status, headers, body))
        raise AssertionError("unreachable")

    def _cancel_quietly(self, op_id: str | None) -> None:
        """Cancel our operation; it may still be on its way to the daemon (404 for a bit)."""
        if op_id is None:
            return
        plan = CancelThenWait(op_id, time.monotonic(), _q)
        try:
            while plan.again(self._http.request("POST", plan.cancel_path,
                                                timeout=CANCEL_GRACE_S)[0], time.monotonic()):
                time.sleep(CANCEL_POLL_S)
        except (Lost, Unreachable):
            pass

    # -- sessions --------------------------------------------------------------------------

    def session_start(self, session_id: str | None = None, *, label: str | None = None,
                      isolated: bool = False, state: str | None = None,
                      browser: str | None = None, cdp_url: str | None = None,
                      grid: str | None = None, allow_domains: list[str] | None = None,
                      block_domains: list[str] | None = None, use: bool = True) -> Session:
        """Start a session (its own tab in its own window). `isolated`: a browser context
        of its own; `state`: a storageState file to start it from (needs `isolated`).
        `cdp_url` / `grid`: in a browser someone else runs / on a Selenium Grid.
        `allow_domains` / `block_domains` narrow the daemon's policy for this session.
        With `use`, this client acts in it from now on."""
        body = session_start_body(session_id, label, isolated, state, browser, cdp_url, grid,
                                  allow_domains, block_domains)
        session = Session.from_dict(self._json(*route("session_start"), body))
        if use:
            self.session_id = session.session_id
        return session

    def session_list(self) -> list[Session]:
        return [Session.from_dict(s) for s in self._json(*route("session_list"))["sessions"]]

    def session_stop(self, session_id: str | None = None, *, wait: bool = True,
                     timeout: float | None = None) -> Result:
        """Stop a session (default: this client's), after its running operation with `wait`."""
        stopped = Result.from_dict(_check(*self._send(self._stop_request(session_id, wait,
                                                                          timeout))))
        self._stopped(session_id)
        return stopped

    # -- operations ------------------------------------------------------------------------

    def op_get(self, op_id: str) -> Result:
        """One operation with its timeline (however it ended: this does not raise for it)."""
        return Result.from_dict(self._json(*route("op_get", op_id=op_id)))

    def op_list(self, session: str | None = None, *, all_sessions: bool = False,
                limit: int = 50) -> list[Result]:
        sid = None if all_sessions else (session or self.session_id)
        answer = self._json("GET", self._ops_query(sid, limit))
        return [Result.from_dict(o) for o in answer["ops"]]

    def op_cancel(self, op_id: str) -> Result:
        """Ask for a cancel; `Result.cancel` is "requested" or "already_ended"."""
        return Result.from_dict(self._json(*route("op_cancel", op_id=op_id)))

    def op_wait(self, op_id: str, timeout: float = 30.0) -> Result:
        """Wait for an operation to end; raise its error like the call itself would.
        Still running after `timeout`: a Result whose `state` is not "ended"."""
        return Result.from_dict(_check(*self._send(self._wait_request(op_id, timeout))))

    # -- the daemon ------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        return self._json(*route("health"))

    def status(self, connect: bool = False) -> dict[str, Any]:
        return self._json(*_status_route(connect))

    def tools(self) -> list[dict[str, Any]]:
        return list(self._json(*route("tools"))["tools"])


# -- the asyncio client -------------------------------------------------------------------
