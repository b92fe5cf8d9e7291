"""What `op list` says each operation acted on (base/render.py's `_target`): typed text
as it was typed, scripts and paths on one line, every row one line and at most 40
characters of it; and, listing every session's, whose each one is."""

from __future__ import annotations

import pytest
from support.cli import Bsk

from browserskill.base.render import _target

CASES = [
    ({"text": "login"}, "login"),  # plain text stays plain
    ({"text": " login"}, '" login"'),  # the space was typed: quoted, kept
    ({"text": "one\ntwo"}, '"one\\ntwo"'),
    ({"text": '"quoted" x'}, '"\\"quoted\\" x"'),  # not mistaken for the quoting
    ({"key": " "}, '" "'),  # was shown as nothing
    ({"text": "a\u2028b"}, '"a\\u2028b"'),  # a line separator escaped, not printed
    ({"text": "a\u00a0b é"}, '"a\\u00a0b é"'),  # a blank that is not a space, shown so
    ({"text": " " + "x" * 50}, '" ' + "x" * 36 + '…"'),  # cut inside the quotes
    ({"text": " " + "x" * 35 + "\\\\"}, '" ' + "x" * 35 + '…"'),  # never half an escape
    ({"expression": "(() => {\n  return 1\n})()"}, "(() => { return 1 })()"),
    ({"path": "/tmp/out  dir/a.png"}, "/tmp/out dir/a.png"),
    ({"ref": "e12", "text": " x"}, "e12"),  # the ref first: what it acted on
]


@pytest.mark.parametrize(("params", "shown"), CASES)
def test_what_op_list_says_an_operation_acted_on(params: dict[str, object],
                                                 shown: str) -> None:
    said = _target(params)
    assert said == shown
    assert len(said) <= 40 and len(said.splitlines()) <= 1


def test_op_list_all_says_whose_each_operation_is(bsk: Bsk) -> None:
    """`op list --all` names each row's session (columns aligned); one session's list,
    where every row is that session's, does not."""
    other = bsk.with_session("list-other")
    bsk.ok("session", "start", "list-other")
    try:
        mine_id = bsk.ok("eval", "1")["op_id"]
        theirs_id = other.ok("eval", "2")["op_id"]
        rows = bsk("op", "list", "--all", as_json=False).stdout.splitlines()
        row = {r.split()[0]: r for r in rows}
        assert row[mine_id].split()[2:4] == [bsk.session, "eval"], rows
        assert row[theirs_id].split()[2:4] == ["list-other", "eval"], rows
        assert row[mine_id].index(" eval ") == row[theirs_id].index(" eval "), rows
        mine = bsk("op", "list", as_json=False).stdout.splitlines()
        assert [r.split()[2] for r in mine if r.startswith(mine_id)] == ["eval"], mine
        assert theirs_id not in "\n".join(mine), mine
    finally:
        bsk.ok("session", "stop", "list-other")
