"""`bsk mcp` as an MCP client starts it: over stdio, with the runner's BSK_* environment."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator

from mcp import ClientSession, StdioServerParameters, stdio_client

from support.cli import Bsk


@contextlib.asynccontextmanager
async def mcp_session(bsk: Bsk, *args: str) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with `bsk mcp ARGS` (e.g. `--session S`, `--caps …`)."""
    env = {k: v for k, v in bsk.env.items() if k.startswith("BSK_")}
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "browserskill", "mcp", *args], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session
