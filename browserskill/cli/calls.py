"""One tool call from the CLI: sent with its op id named up front, so that Ctrl-C cancels
it and a dying daemon's replacement can say how it ended (docs/design.md, interruption).
Shared by `bsk TOOL …` and `bsk replay`."""

from __future__ import annotations

import sys

from browserskill.base import contract
from browserskill.base.catalog import ToolSpec
from browserskill.base.contract import Dispatched
from browserskill.base.errors import BskError
from browserskill.cli.daemon_client import Client
from browserskill.cli.transport import DaemonLost, DaemonUnreachable, request

TYPE_CHECKING = False  # typing costs ms at start-up; annotations only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def call_request(client: Client, params: dict[str, Any], op_id: str | None = None,
                 ) -> tuple[dict[str, Any], dict[str, str], str]:
    """A tool call's body and headers from its params and the global options, and its op
    id: named up front (`op_id`: the one it was first sent with), so Ctrl-C can cancel it
    and report how it ended."""
    g = client.g
    body = dict(params)
    if g.wait:
        body["wait"] = True
    if g.timeout:
        body["timeout_ms"] = int(g.timeout * 1000)
    op_id = op_id or contract.new_op_id()
    headers = {"X-Op-Id": op_id}
    if g.key:
        headers["Idempotency-Key"] = g.key
    return body, headers, op_id


def tool_call(client: Client, spec: ToolSpec, params: dict[str, Any],
              op_id: str | None = None, *, resend: bool = True) -> dict[str, Any]:
    """`op_id`: the call's id when it is sent again; `resend`: whether a call no daemon
    received may be sent again (once: not when it already is that)."""
    g = client.g
    if g.timeout and spec.timeout_range_s:
        contract.check_timeout_s(str(g.timeout), " ".join(spec.words), spec.timeout_range_s)
    body, headers, op_id = call_request(client, params, op_id)
    try:
        _, _, answer = client.call(
            "POST", f"/v1/sessions/{g.session}/tools/{spec.name}", body,
            headers=headers, wire_timeout=contract.wire_timeout_s(spec, params, g.timeout),
        )
    except KeyboardInterrupt:
        return interrupted(client, op_id, spec.name)
    except TimeoutError:  # past the wire deadline: the daemon knows how it ended
        return interrupted(client, op_id, spec.name, "no answer in time")
    except DaemonLost as e:
        again = None
        if resend and e.unanswered:
            def again() -> dict[str, Any]:
                return tool_call(client, spec, params, op_id, resend=False)
        return lost_daemon(client, op_id, spec.name, again)
    return answer


def lost_daemon(client: Client, op_id: str, tool: str | None = None,
                again: Callable[[], dict[str, Any]] | None = None) -> dict[str, Any]:
    """The daemon died mid-call: a new one reconciles the journal and says what it knows.

    `again` sends the call once more; given when not one byte of an answer came. A daemon
    killed a moment before can still take a connection (its listening socket closes when
    its last thread has exited), which is then reset unread. The call is sent again only
    if the daemon now answering has no record of it in a journal it holds whole: the
    dispatcher journals an operation before anything of it goes out, so it never ran."""
    print(f"bsk: the daemon went away during {op_id}; asking a new one what happened",
          file=sys.stderr)
    import time

    status, answer = 0, None
    for _ in range(50):  # the dying daemon's socket may still reset a connection or two
        try:
            status, _, answer = client.call("GET", f"/v1/ops/{op_id}")
            break
        except DaemonLost:
            time.sleep(0.1)
        except (BskError, DaemonUnreachable):
            break
    if status == 200 and isinstance(answer, dict):
        return answer
    if again is not None and never_recorded(status, answer):
        print(f"bsk: {op_id} never reached a daemon; sending it again", file=sys.stderr)
        return again()
    return contract.refused(
        contract.error_dict("outcome_unknown", "the daemon went away before answering",
                            f"`bsk op show {op_id}` once the daemon is back; inspect the "
                            "page before acting again"),
        op_id=op_id, session_id=client.g.session, tool=tool, dispatched=Dispatched.UNKNOWN)


def never_recorded(status: int, answer: Any) -> bool:
    """The daemon's answer to `GET /v1/ops/{id}` says it has no such operation, and no
    journal of an earlier daemon was moved aside unread (where it could have been)."""
    error = answer.get("error") if isinstance(answer, dict) else None
    return (status == 404 and isinstance(error, dict) and error.get("code") == "op_not_found"
            and (error.get("details") or {}).get("journal_whole") is True)


def interrupted(client: Client, op_id: str, tool: str | None = None,
                why: str = "interrupted") -> dict[str, Any]:
    """Ctrl-C, SIGTERM or no answer in time: cancel our operation, then report how it
    really ended (what the daemon recorded, never a guess)."""
    import time

    print(f"bsk: {why}; cancelling {op_id}…", file=sys.stderr)
    plan = contract.CancelThenWait(op_id, time.monotonic())
    while True:
        status, _, _ = request(client.sock, "POST", plan.cancel_path,
                               timeout=contract.CANCEL_GRACE_S)
        if not plan.again(status, time.monotonic()):
            break
        time.sleep(contract.CANCEL_POLL_S)
    if status == 404:
        return plan.never_arrived(client.g.session, tool)
    return request(client.sock, "GET", plan.wait_path, timeout=contract.CANCEL_GRACE_S + 5)[2]
