"""`bsk mcp`: the browser tools as an MCP server on stdio, built on the Python client.

- Tools and their input schemas come from the catalog (the same definitions the CLI and
  the HTTP API use), plus the per-call options `wait` and `timeout_ms`. `session_stop`
  is not a tool: the connection's session ends with the connection.
- One session per MCP connection, started on the first tool call and stopped when the
  connection ends; `bsk mcp --session ID` (or `BSK_SESSION`) uses an existing session
  instead and leaves it running.
- Every call answers with structured content in the result shape (docs/design.md §3: `status`,
  `dispatched`, `retry_safe`, `error.code`, …) plus the short text `bsk` prints;
  failures are tool errors (`isError`), never protocol errors. A screenshot also comes
  back as an image.
- A client's `notifications/cancelled` cancels the operation (each call names its
  operation with `X-Op-Id`; the cancel is `POST /v1/ops/{id}/cancel`).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import signal
import sys
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from browserskill import __version__, contract, render, user_files
from browserskill.client import AsyncClient, BrowserSkillError, Result
from browserskill.errors import BskError
from browserskill.tools import catalog

SCREENSHOT_MAX_BYTES = 50_000_000  # the PNG read back to return it as an image

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 10.0  # stopping the connection's session at the end

# The per-call options an MCP tool takes besides its parameters (no detach: a call
# answers when its operation ends).
CALL_OPTIONS: dict[str, Any] = {k: contract.CALL_OPTIONS[k] for k in ("wait", "timeout_ms")}
OUTPUT_SCHEMA = contract.RESULT_SCHEMA


def _exposed(spec: catalog.ToolSpec | None) -> bool:
    return spec is not None and not spec.hidden  # session_stop: the connection's own end


INSTRUCTIONS = """\
A real browser. Loop: snapshot (refs like e12) → act on a ref → snapshot again after a
navigation. Every result says status, dispatched and retry_safe:
- session_busy: another call holds the session; retry, or pass wait=true.
- stale_ref / ref_not_found: take a new snapshot and use its refs.
- outcome_unknown / tool_page_unloaded: it may have happened; inspect the page before
  acting again, never retry blindly.
- user_interrupted: the user took over; ask them before acting again.
An eval whose script throws completes with result.ok=false (error.code page_error)."""


_CLI_COMMAND = re.compile(r"`bsk ([a-z -]+?)((?: --[a-z-]+(?: [^`\s-][^`\s]*)?)*)`")
_CLI_FLAG = re.compile(r"--(no-)?([a-z][a-z-]*)((?: [a-z]+)?)")
_CHOICES = {p.name: p.choices for t in catalog.TOOLS for p in t.params if p.choices}


def mcp_text(text: str) -> str:
    """Catalog text speaks CLI (`--since`, `bsk tab list --scope user`); over MCP the same
    things are parameters and tools: `since`, `tab_list` with scope="user"."""
    def command(m: re.Match[str]) -> str:
        spec = catalog.BY_WORDS.get(tuple(m.group(1).split()))
        if spec is None:
            return m.group(0)
        args = [f'{a.group(1).replace("-", "_")}="{a.group(2)}"' if a.group(2)
                else a.group(1).replace("-", "_")
                for a in re.finditer(r"--([a-z-]+)(?: (\S+))?", m.group(2))]
        return f"`{spec.name}`" + (f" with {', '.join(args)}" if args else "")

    def flag(m: re.Match[str]) -> str:
        name, word = m.group(2).replace("-", "_"), m.group(3)
        if name == "timeout":
            return "timeout_ms" + word
        if name == "json":
            return m.group(0)  # "the CLI's --json": about the CLI itself
        if word.strip() in _CHOICES.get(name, ()):
            return f'{name}="{word.strip()}"'
        return (f"{name}=false" if m.group(1) else name) + word

    text = text.replace("--timeout (1-120 s, default 60)",
                        "timeout_ms (1000-120000, default 60000)")
    return _CLI_FLAG.sub(flag, _CLI_COMMAND.sub(command, text))


def tool_definitions() -> list[types.Tool]:
    tools = []
    for spec in catalog.TOOLS:
        if not _exposed(spec):
            continue
        schema = spec.input_schema()
        for prop in schema["properties"].values():
            prop["description"] = mcp_text(prop["description"])
        schema["properties"] = {**schema["properties"], **CALL_OPTIONS}
        read = spec.effect is catalog.Effect.READ
        tools.append(types.Tool(
            name=spec.name,
            title=" ".join(spec.words),
            description=f"{mcp_text(spec.summary)} (CLI: `bsk {spec.usage()}`)",
            input_schema=schema,
            output_schema=OUTPUT_SCHEMA,
            annotations=types.ToolAnnotations(
                title=" ".join(spec.words), read_only_hint=read,
                destructive_hint=False if read else None,
                idempotent_hint=spec.effect.retry_safe, open_world_hint=True),
        ))
    return tools


def answer_of(e: BrowserSkillError, session_id: str | None, tool: str) -> dict[str, Any]:
    """The result shape of a failure, also for calls that never became an operation."""
    if e.result is not None:
        return e.result.raw
    return contract.refused(contract.error_dict(e.code, e.message, e.hint, e.details),
                            op_id=e.op_id, session_id=session_id, tool=tool,
                            status=e.status, dispatched=e.dispatched, retry_safe=e.retry_safe)


def to_mcp(spec: catalog.ToolSpec | None, answer: dict[str, Any]) -> types.CallToolResult:
    error = answer.get("error")
    failed = isinstance(error, dict) and bool(error) and error.get("code") != "page_error"
    if failed:
        text = render.error_text(answer)
    else:
        try:
            text = render.result_text(spec.words if spec else (), answer)
        except (KeyError, TypeError, ValueError):
            text = render.result_text((), answer)
        if error:
            text += f"\npage error: {error.get('message', '')}"
    content: list[Any] = [types.TextContent(text=text)]
    result = answer.get("result") or {}
    if not failed and spec is not None and spec.name == "screenshot" and result.get("path"):
        try:
            data = user_files.read_bounded(result["path"], "path", SCREENSHOT_MAX_BYTES)
            content.append(types.ImageContent(data=base64.b64encode(data).decode(),
                                              mime_type="image/png"))
        except BskError as e:  # a daemon on another machine (TCP): the path is not ours
            content.append(types.TextContent(text=f"(image not readable here: {e.message})"))
    return types.CallToolResult(content=content, structured_content=answer, is_error=failed)


class Bridge:
    """One MCP connection's view of the daemon: its session and its calls."""

    def __init__(self, client: AsyncClient, session: str | None,
                 isolated: bool = False) -> None:
        self.client = client
        self.session_id = session
        self.isolated = isolated  # the connection's own session gets its own context
        self.owns_session = False
        self._lock = anyio.Lock()

    async def session(self) -> str:
        async with self._lock:
            if self.session_id is None:
                started = await self.client.session_start(label="mcp", use=False,
                                                          isolated=self.isolated)
                self.session_id = started.session_id
                self.owns_session = True
            return self.session_id

    async def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        spec = catalog.BY_NAME.get(name)
        if spec is None or not _exposed(spec):
            known = ", ".join(t.name for t in catalog.TOOLS if _exposed(t))
            e = BrowserSkillError(f"tool: unknown tool {name!r} (tools: {known})",
                                  code="invalid_params", hint="list the tools again")
            return to_mcp(None, answer_of(e, self.session_id, name))
        params = dict(arguments or {})
        wait = params.pop("wait", False)
        timeout_ms = params.pop("timeout_ms", None)
        options: dict[str, Any] = {}
        if isinstance(wait, bool):
            options["wait"] = wait
        else:
            params["wait"] = wait  # the daemon says why it is wrong
        if isinstance(timeout_ms, int) and not isinstance(timeout_ms, bool) and timeout_ms > 0:
            options["timeout"] = timeout_ms / 1000
        elif timeout_ms is not None:
            params["timeout_ms"] = timeout_ms
        try:
            sid = await self.session()
            result: Result = await self.client.call(name, params, session=sid,
                                                    op_id=contract.new_op_id(), **options)
            answer = result.raw
        except BrowserSkillError as e:
            answer = answer_of(e, self.session_id, name)
        return to_mcp(spec, answer)

    async def close(self) -> None:
        if self.owns_session and self.session_id:
            try:
                await self.client.session_stop(self.session_id, wait=True,
                                               timeout=STOP_TIMEOUT_S)
            except BrowserSkillError as e:
                log.warning("could not stop session %s: %s", self.session_id, e)


def build_server(bridge: Bridge) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_definitions())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await bridge.call(params.name, params.arguments)

    return Server("browserskill", version=__version__, title="BrowserSkill",
                  instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(session: str | None = None, isolated: bool = False,
                **client_options: Any) -> None:
    """Serve one MCP connection on stdin/stdout; stop its session when it ends."""
    main_task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    if main_task is not None:
        loop.add_signal_handler(signal.SIGTERM, main_task.cancel)
    # No client-side retries: a call that finds the session busy answers session_busy
    # at once unless it passed wait=true (docs/mcp.md) — the model decides, not a timer.
    client_options.setdefault("retries", 0)
    async with AsyncClient(**client_options) as client:
        bridge = Bridge(client, session, isolated)
        server = build_server(bridge)
        try:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream,
                                 server.create_initialization_options())
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_TIMEOUT_S + 5):
                await bridge.close()


def main(session: str | None = None, isolated: bool = False) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="bsk mcp: %(levelname)s %(message)s")
    try:
        asyncio.run(serve(session, isolated))
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
    return 0
