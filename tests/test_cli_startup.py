"""What one `bsk` tool call costs the machine before the daemon sees it (issue 23).

The launcher runs Python isolated and without `site` and hands the command line to the
daemon (browserskill/cli/fast.py, browserskill/api/cli_call.py); these tests pin what
that path imports, that it reads the command line where the caller stands, and that
everything it does not do still goes to the whole CLI."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.cli import Bsk

from browserskill.api import cli_call
from browserskill.base import catalog, paths
from browserskill.cli import fast, launcher
from browserskill.cli.commands import CONTROL, CONTROL_BY_WORDS
from browserskill.cli.main import find_command

# What a tool call imports beyond the bare interpreter (`python -I -S -c pass`). Adding
# to this set slows down every agent action: measure it (bench/cli_roundtrip.py) first.
TOOL_CALL_IMPORTS = {"browserskill", "browserskill.cli", "browserskill.cli.fast",
                     "browserskill.base", "browserskill.base.http1", "_socket"}


def imported(argv: list[str], env: dict[str, str], cwd: Path | None = None,
             ) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    run = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", *argv], env=env,
                         cwd=cwd, capture_output=True, text=True, timeout=60)
    names = {line.rsplit("|", 1)[1].strip() for line in run.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    return names - {"package"}, run


def test_a_tool_call_imports_only_what_it_needs(bsk: Bsk, tmp_path: Path) -> None:
    script = tmp_path / "bsk"
    launcher.write(str(script))
    bsk.ok("eval", "1")  # the daemon is up: the call goes the launcher's way
    floor, _ = imported(["-c", "pass"], bsk.env)
    names, run = imported([str(script), "-s", bsk.session, "eval", "1+1"], bsk.env)
    assert run.returncode == 0 and run.stdout == "2\n", run.stderr[-2000:]
    added = names - floor
    assert added == TOOL_CALL_IMPORTS, (
        f"a tool call now imports {sorted(added - TOOL_CALL_IMPORTS)} (and no longer "
        f"{sorted(TOOL_CALL_IMPORTS - added)}): every agent action pays for it")


def test_the_launcher_runs_isolated_without_site(tmp_path: Path) -> None:
    text = launcher.script()
    assert text.splitlines()[0] == f"#!{sys.executable} -IS"
    installed = Path(sys.executable).parent / "bsk"  # scripts/install.sh writes it
    assert installed.read_text().splitlines()[0].endswith(" -IS"), (
        "the venv's bsk is pip's wrapper: run scripts/install.sh")


def test_relative_paths_and_files_are_the_callers(bsk: Bsk, tmp_path: Path) -> None:
    page = tmp_path / "here.html"
    page.write_text("<title>Here</title><p>here</p>")
    env = {**bsk.env, "BSK_SESSION": bsk.session}
    run = subprocess.run([sys.executable, "-m", "browserskill", "--json", "open",
                          "./here.html"], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=90)
    assert run.returncode == 0, run.stderr
    assert page.as_uri() in run.stdout
    shot = subprocess.run([sys.executable, "-m", "browserskill", "screenshot", "shot.png"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=90)
    assert shot.returncode == 0, shot.stderr
    assert (tmp_path / "shot.png").read_bytes()[:4] == b"\x89PNG"


def test_the_daemon_leaves_what_is_not_a_tool_call_to_the_cli(bsk: Bsk) -> None:
    # Another version's launcher, or a command that is not a tool call: 204, nothing run.
    import http.client

    def post(version: str, argv: list[str]) -> int:
        conn = http.client.HTTPConnection("localhost")
        conn.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.sock.connect(str(bsk.home / "bsk.sock"))
        body = fast._command_line(argv, {})
        conn.request("POST", "/v1/cli", body, {"X-Bsk-Version": version})
        return conn.getresponse().status

    from browserskill import __version__

    assert post("0.0.0-older", ["eval", "1"]) == 204
    assert post(__version__, ["session", "list"]) == 204
    assert post(__version__, ["eval", "--help"]) == 204
    assert post(__version__, ["eval", "1"]) == 200


def test_command_words_mean_the_same_to_the_daemon() -> None:
    """The daemon finds a tool in a command line as `bsk` does (controls first)."""
    lines = [[*c.words, "x"] for c in CONTROL] + [[*t.words, "x"] for t in catalog.TOOLS]
    for line in lines:
        words, _ = find_command(line)
        spec, _ = cli_call.tool_of(line)
        cli_spec = catalog.BY_WORDS.get(words)
        runs_a_tool = cli_spec is not None and not cli_spec.hidden and \
            words not in CONTROL_BY_WORDS
        assert spec == (cli_spec if runs_a_tool else None), line


@pytest.mark.parametrize("env", [
    {"BSK_HOME": "/tmp/bsk-x"}, {"BSK_HOME": "rel/home"}, {"BSK_HOME": "~/bskh"},
    {"HOME": "/home/someone"}, {"HOME": "/h", "XDG_STATE_HOME": "/s"}])
def test_the_launcher_finds_the_socket_paths_finds(env: dict[str, str],
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("BSK_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # posix.environ is the process's at start: hand the same mapping to both.
    assert fast._socket_path(dict(os.environ)) == paths.socket_file()


def _one_answer(sock_path: Path, answer: bytes) -> threading.Thread:
    """A stand-in daemon that reads one request and sends `answer`, then hangs up."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    server.listen(1)

    def serve() -> None:
        conn, _ = server.accept()
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        conn.sendall(answer)
        conn.close()
        server.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(("answer", "resumed"), [
    # A daemon of an older version has no /v1/cli: the whole CLI runs the command.
    (b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", None),
    (b"HTTP/1.1 204 No Content\r\n\r\n", None),
    # The daemon went away after taking the call: the whole CLI asks how it ended.
    (b"HTTP/1.1 200 OK\r\nX-Bsk-Wire-Timeout: 60\r\n\r\n", "lost"),
    # ... before one byte of an answer: the whole CLI may send it again (cli/calls.py).
    (b"", "unanswered"),
    # The answer: printed as it came, with its exit code; nothing handed on.
    (b"HTTP/1.1 200 OK\r\nX-Bsk-Wire-Timeout: 60\r\n\r\n4 2 5\n2\nnope\n", "printed"),
])
def test_the_launcher_hands_the_call_on_as_the_daemon_answers(
        answer: bytes, resumed: str | None, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    thread = _one_answer(tmp_path / "bsk.sock", answer)
    monkeypatch.setattr(fast, "_environ", lambda: {"BSK_HOME": str(tmp_path)})
    handed: list[tuple[list[str], tuple[str, str] | None]] = []
    monkeypatch.setattr(fast, "_whole_cli", lambda argv, resume=None: handed.append(
        (argv, resume)) or 9)
    code = fast.main(["eval", "1+1"])
    thread.join(10)
    if resumed == "printed":
        assert (code, handed) == (4, [])
        assert capfd.readouterr() == ("2\n", "nope\n")
        return
    assert code == 9 and len(handed) == 1 and handed[0][0] == ["eval", "1+1"]
    if resumed is None:
        assert handed[0][1] is None
    else:
        op_id, what = handed[0][1] or ("", "")
        assert op_id.startswith("op_") and what == resumed


@pytest.mark.parametrize("text", [
    "plain", "", 'quote " and back\\slash', "\\u0041 is not A", "tab\tnew\nline\x00\x1f\x7f",
    "héllo ☃ 😀", "\u2028\u2029", "lone \udcff surrogate \\\udcfe", "\ud800"])
def test_the_command_line_reads_back_exactly(text: str) -> None:
    """The launcher writes JSON by hand (no `_json`): the daemon's `json.loads` must give
    back every argument, directory and variable as they were, bytes that are not UTF-8
    (surrogates) included."""
    line = fast._command_line(["eval", text], {"BSK_X": text, "OTHER": "x"})
    assert json.loads(line) == {"argv": ["eval", text], "cwd": os.getcwd(),
                                "env": {"BSK_X": text}}


def _post_cli(sock_path: Path, argv: list[str]) -> tuple[bytes, bytes]:
    """(head, body) of a launcher's call, read as the launcher reads it."""
    from browserskill import __version__
    from browserskill.base import http1

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(str(sock_path))
    sock.sendall(http1.request("POST", "/v1/cli", (
        ("Connection", "close"), ("X-Op-Id", "op_" + os.urandom(6).hex()),
        ("X-Bsk-Version", __version__)),
        fast._command_line(argv, {})))
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    return head.lower(), http1.body(http1.parse_head(head)[1], rest, closed=True)


def test_a_short_call_answers_in_one_piece_a_long_one_names_its_deadline_first(
        bsk: Bsk, site: str) -> None:
    """A call that ends within `HEAD_WITHIN_S` answers with one head and body (its
    length given: one write, one wake-up of `bsk`); a longer one gets the head with the
    wire deadline first, the body when it ends (chunked)."""
    bsk.ok("open", f"{site}/counter.html")
    sock_path = bsk.home / "bsk.sock"
    head, body = _post_cli(sock_path, ["-s", bsk.session, "eval", "1+1"])
    assert b"content-length: 8" in head and b"transfer-encoding" not in head, head
    assert b"x-bsk-wire-timeout: 60" in head and body == b"0 2 0\n2\n"
    slow_s = cli_call.HEAD_WITHIN_S + 1.5
    head, body = _post_cli(sock_path, ["-s", bsk.session, "eval",
                                       f"(await slow('late', {slow_s * 1000:.0f})).tag"])
    assert b"transfer-encoding: chunked" in head and b"x-bsk-wire-timeout: 60" in head, body
    assert body == b"0 5 0\nlate\n", body


def test_launch_ends_an_answered_call_without_teardown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    """`launch` (the launcher's entry) ends a call the daemon answered with `_exit` and its
    exit code, after its output is out; anything else exits as Python does."""
    exits: list[int] = []

    def _exit(code: int) -> None:
        assert capfd.readouterr() == ("2\n", "nope\n")  # flushed before the exit
        exits.append(code)
        raise SystemExit("_exit")

    monkeypatch.setattr(fast.posix, "_exit", _exit)
    monkeypatch.setattr(fast, "_environ", lambda: {"BSK_HOME": str(tmp_path)})
    monkeypatch.setattr(sys, "argv", ["bsk", "eval", "1+1"])
    thread = _one_answer(tmp_path / "bsk.sock",
                         b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n4 2 5\n2\nnope\n")
    with pytest.raises(SystemExit, match="_exit"):
        fast.launch()
    thread.join(10)
    assert exits == [4]
    (tmp_path / "bsk.sock").unlink()
    thread = _one_answer(tmp_path / "bsk.sock", b"HTTP/1.1 204 No Content\r\n\r\n")
    monkeypatch.setattr(fast, "_whole_cli", lambda argv, resume=None: 3)
    with pytest.raises(SystemExit) as ended:
        fast.launch()
    thread.join(10)
    assert ended.value.code == 3 and exits == [4]
