"""The daemon as one `bsk` process sees it: found by its socket, started on first use."""

from __future__ import annotations

from browserskill.base import contract, paths
from browserskill.base.errors import BskError
from browserskill.cli.transport import DaemonUnreachable, request

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from typing import Any

    from browserskill.base.cli_args import Globals


class Client:
    """The daemon, as this one `bsk` process sees it: started on first use."""

    def __init__(self, g: Globals) -> None:
        self.g = g
        self.sock = paths.socket_file()
        self._spawned = False
        self._checked = False

    def check_home(self) -> None:
        """A state dir no daemon could use is one clear line, before any connect."""
        if not self._checked:
            problem = paths.state_dir_problem(paths.state_dir_name())
            if problem:
                raise BskError("invalid_params", f"BSK_HOME: {problem}",
                               details={"field": "BSK_HOME"})
            self._checked = True

    def call(self, method: str, path: str, body: dict[str, Any] | None = None, *,
             headers: dict[str, str] | None = None, spawn: bool = True,
             timeout: float | None = None, wire_timeout: float | None = None,
             ) -> tuple[int, dict[str, str], Any]:
        """`timeout`: the deadline the daemon works to (seconds); `wire_timeout`: how long
        to wait for its answer, when the caller computed it (contract.wire_timeout_s)."""
        if wire_timeout is None:
            wire_timeout = contract.wire_timeout_s(None, {}, timeout or self.g.timeout)
        self.check_home()
        try:
            return request(self.sock, method, path, body, timeout=wire_timeout, headers=headers)
        except DaemonUnreachable:
            if not spawn:
                raise
        self.start_daemon()
        return request(self.sock, method, path, body, timeout=wire_timeout, headers=headers)

    def start_daemon(self, extra: list[str] | None = None) -> int:
        from browserskill.daemon.spawn import DaemonStartError, spawn

        self.check_home()
        try:
            pid = spawn(extra)
        except DaemonStartError as e:
            raise BskError("browser_unavailable", f"could not start the daemon: {e}",
                           hint="run `bsk doctor` for what to fix") from None
        self._spawned = True
        return pid
