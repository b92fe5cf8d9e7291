"""`ExtensionLink`: the BrowserLink over the extension's WebSocket, relaying CDP through
`chrome.debugger` in the user's own browser. It is `CdpLink`'s sibling: the same
conversation core (`conversation.py`), another transport; tools see no difference."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

import websockets
from websockets.asyncio.server import ServerConnection

from browserskill.base import background
from browserskill.browser.conversation import Conversation
from browserskill.browser.extension_protocol import SILENCE_S
from browserskill.browser.link import (
    CdpError,
    Command,
    EventHandler,
    LinkError,
    PendingSequence,
    Requester,
    SendObserver,
    TargetClosed,
    TargetHandle,
    await_reply,
)

log = logging.getLogger(__name__)


class ExtensionPeer(Protocol):
    """The browser at the far end, as far as the link needs it (for `version()` and its
    log lines); `extension.ExtensionBrowser` is one."""

    instance_id: str
    name: str
    version: str
    extension_version: str


def tab_session(chrome_tab_id: int) -> str:
    return f"tab-{chrome_tab_id}"


class ExtensionLink(Requester):
    """One WebSocket connection to the extension: a BrowserLink over chrome.debugger."""

    relays_sequences = True

    def __init__(self, ws: ServerConnection, browser: ExtensionPeer) -> None:
        self._ws = ws
        self.browser = browser
        self.endpoint = f"extension:{browser.instance_id}"
        self._conv = Conversation(ws.send, lost=(websockets.ConnectionClosed,),
                                  name="extension connection")
        self._children: dict[str, int] = {}  # iframe CDP session id -> chrome tab id
        self._last_heard = time.monotonic()
        self.message_handler: Callable[[dict[str, Any]], None] | None = None
        self._reader = asyncio.create_task(self._read_loop(), name="extension-reader")
        self._watchdog = asyncio.create_task(self._watch(), name="extension-watchdog")

    @property
    def closed(self) -> bool:
        return self._conv.closed

    @property
    def close_reason(self) -> str | None:
        return self._conv.closed_reason

    async def _post(self, message: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        """Send one message that expects an answer; return the answer's future."""
        return (await self._conv.post(message.get("method") or message["op"], message))[1]

    async def call(self, message: dict[str, Any], *, timeout: float = 30.0) -> dict[str, Any]:
        """One tab/window operation of the extension (`op`), answered or failed."""
        return await await_reply(message["op"], await self._post(message), timeout)

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *,
        session_id: str | None = None,
    ) -> asyncio.Future[dict[str, Any]]:
        if session_id is None:
            fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            if method == "Browser.getVersion":
                fut.set_result(await self.version())
            else:
                fut.set_exception(CdpError(
                    method, -32601, "browser-level commands are not available through the "
                    "extension (chrome.debugger attaches to tabs)"))
            return fut
        message: dict[str, Any] = {"op": "cdp", "method": method, "params": params or {},
                                   **self._target(method, session_id)}
        self._conv.sending(method, session_id)
        return await self._post(message)

    def _target(self, method: str, session_id: str) -> dict[str, Any]:
        """Where chrome.debugger sends a command: a tab, or an iframe's session in it."""
        if session_id.startswith("tab-"):
            return {"tabId": int(session_id[4:])}
        if session_id in self._children:
            return {"tabId": self._children[session_id], "sessionId": session_id}
        raise CdpError(method, -32001, f"no session {session_id} on this link")

    async def request_sequence(self, commands: list[Command], *,
                               session_id: str) -> PendingSequence:
        """The extension runs the commands one after another itself: one hop for all."""
        message = {"op": "cdp_sequence", **self._target(commands[0].method, session_id),
                   "commands": [c._asdict() for c in commands]}
        for command in commands:
            self._conv.sending(command.method, session_id)
        msg_id, answer = await self._conv.post("cdp_sequence", message)
        reply: asyncio.Future[list[dict[str, Any]]] = (
            asyncio.get_running_loop().create_future())

        def relay(done: asyncio.Future[dict[str, Any]]) -> None:
            if reply.done():
                return
            if done.cancelled():
                reply.cancel()
            elif (error := done.exception()) is not None:
                reply.set_exception(_command_error(error, commands))
            else:
                reply.set_result(done.result().get("results", []))

        answer.add_done_callback(relay)

        async def abort() -> None:
            # The extension answered (or the link is gone): nothing is left to stop.
            if answer.done() or self._conv.closed:
                return
            answer.cancel()
            try:
                await self._ws.send(json.dumps({"type": "abort", "of": msg_id}))
            except websockets.ConnectionClosed:
                pass

        return PendingSequence(reply, abort)

    def subscribe(self, session_id: str | None, handler: EventHandler) -> Callable[[], None]:
        return self._conv.subscribe(session_id, handler)

    def on_close(self, handler: Callable[[str], None]) -> None:
        self._conv.on_close(handler)

    def on_send(self, observer: SendObserver) -> None:
        self._conv.on_send(observer)

    async def create_tab(self, url: str = "about:blank") -> TargetHandle:
        made = await self.call({"op": "tab_create", "url": url})
        return await self.attach(made["tabId"])

    async def attach(self, chrome_tab_id: int) -> TargetHandle:
        info = await self.call({"op": "attach", "tabId": chrome_tab_id})
        return TargetHandle(info["targetId"], tab_session(chrome_tab_id))

    async def close_tab(self, target_id: str) -> None:
        raise CdpError("close_tab", -32601, "close extension tabs through their Agent Window")

    async def version(self) -> dict[str, Any]:
        b = self.browser
        return {"product": f"{b.name}/{b.version}", "protocolVersion": "1.3",
                "userAgent": "", "jsVersion": "", "extension": b.extension_version}

    # Windows through chrome.windows (chrome.debugger has no browser target). The
    # extension refuses any window that is not an Agent Window: a user's is never touched.

    async def window_of(self, target: TargetHandle, *,
                        timeout: float = 30.0) -> dict[str, Any]:
        if not target.session_id.startswith("tab-"):
            raise CdpError("window_of", -32001, f"no tab {target.session_id} on this link")
        return await self.call({"op": "window_bounds", "tabId": int(target.session_id[4:])},
                               timeout=timeout)

    async def set_window_bounds(self, window_id: int, bounds: dict[str, Any], *,
                                timeout: float = 30.0) -> None:
        await self.call({"op": "window_bounds", "windowId": window_id, "bounds": bounds},
                        timeout=timeout)

    async def window_bounds(self, window_id: int, *, timeout: float = 30.0) -> dict[str, Any]:
        answer = await self.call({"op": "window_bounds", "windowId": window_id},
                                 timeout=timeout)
        return dict(answer["bounds"])

    async def close(self) -> None:
        self._conv.close("closed by the daemon")
        await self._ws.close()
        self._reader.cancel()

    async def wait_closed(self) -> None:
        await asyncio.wait({self._reader})

    async def _watch(self) -> None:
        while not self._conv.closed:
            await asyncio.sleep(5)
            if time.monotonic() - self._last_heard > SILENCE_S:
                log.warning("extension %s silent for %.0fs: dropping the link",
                            self.browser.instance_id, SILENCE_S)
                self._conv.close("the extension stopped sending heartbeats")
                await self._ws.close(1011, "heartbeat timeout")
                return

    async def _read_loop(self) -> None:
        reason = "extension connection closed"
        try:
            async for raw in self._ws:
                self._last_heard = time.monotonic()
                self._dispatch(json.loads(raw))
        except websockets.ConnectionClosed as e:
            reason = f"extension connection closed ({e})"
        except asyncio.CancelledError:
            reason = "closed by the daemon"
            raise
        except Exception as e:
            log.exception("extension reader failed")
            reason = f"extension reader failed: {e}"
        finally:
            self._watchdog.cancel()
            self._conv.close(reason)

    def _dispatch(self, msg: dict[str, Any]) -> None:
        if msg.get("id") is not None:
            self._conv.reply(msg, _error)
            return
        kind = msg.get("type")
        if kind == "event":
            self._event(msg)
        elif kind == "ping":
            background.start(self._pong(msg.get("t")), name="extension-pong")
        elif kind in ("detached", "tab_removed"):
            # The hub first (the user cancelling debugging cancels the calls in flight
            # with that reason), then the tab learns it is detached.
            if self.message_handler:
                self.message_handler(msg)
            reason = msg.get("reason") or "target_closed"
            self._conv.emit(tab_session(msg.get("tabId", -1)), "Inspector.detached",
                            {"reason": reason})
        elif self.message_handler is not None:
            self.message_handler(msg)

    async def _pong(self, t: Any) -> None:
        try:
            await self._ws.send(json.dumps({"type": "pong", "t": t}))
        except websockets.ConnectionClosed:
            pass

    def _event(self, msg: dict[str, Any]) -> None:
        method, params = msg.get("method", ""), msg.get("params") or {}
        tab_id = msg.get("tabId")
        key = msg.get("sessionId") or (tab_session(tab_id) if isinstance(tab_id, int) else "")
        if method == "Target.attachedToTarget" and isinstance(tab_id, int):
            self._children[params.get("sessionId", "")] = tab_id
        elif method == "Target.detachedFromTarget":
            self._children.pop(params.get("sessionId", ""), None)
        self._conv.emit(key, method, params)


def _command_error(error: BaseException, commands: list[Command]) -> BaseException:
    """A sequence's failure, named after the command that failed (the extension says which)."""
    index = getattr(error, "index", None)
    if isinstance(error, CdpError) and isinstance(index, int) and 0 <= index < len(commands):
        return CdpError(commands[index].method, error.code, error.message)
    return error


def _error(what: str, err: dict[str, Any]) -> LinkError:
    code, message = err.get("code", ""), err.get("message", "")
    if code == "cdp":
        try:
            inner = json.loads(message)
        except ValueError:
            inner = {"code": -32000, "message": message}
        error = CdpError(what, inner.get("code") or -32000, inner.get("message", ""),
                         inner.get("data") or "")
        error.index = inner.get("index")  # type: ignore[attr-defined]  # in a sequence
        return error
    if code == "restricted":
        return RestrictedPage(message)
    if code == "tab_gone":
        return TargetClosed(f"{what}: {message}")
    return ExtensionOpError(code, f"{what}: {message}")


class ExtensionOpError(LinkError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class RestrictedPage(LinkError):
    """The extension refuses browser pages, the extension store and other extensions."""

