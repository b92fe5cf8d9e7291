"""Interruption (issue 4): how fast a cancel is answered and the session handed on, how
fast a lost browser ends the call in flight, how fast a daemon with a big journal answers
after a restart.

  queued cancel      POST /v1/ops/{id}/cancel for a call waiting in the queue (an eval
                     holds the session): the cancel's answer, then the queued caller's own
                     answer (cancelled, dispatched "no")                      ≤ 20 ms
  dispatched cancel  the same for an eval in flight: the "cancel requested" answer ≤ 20 ms;
                     then the handover: the cancelled call's end (ended_at) to the next
                     queued call's dispatch (its timeline), by the daemon's clock ≤ 20 ms
  compensation       a click cancelled after mousePressed on a page whose mousedown handler
                     blocks the renderer 1.5 s, so the release (its compensation) waits:
                     the session goes to the next call when the compensation ends, not at
                     the 2 s cleanup deadline: compensation end → next dispatch ≤ 20 ms
  browser kill       SIGKILL of the browser's process group with an eval in flight → the
                     caller's outcome_unknown answer                         ≤ 200 ms
  socket close       the CDP socket aborted under the daemon (the tests' fault seam,
                     BSK_TEST_HOOK=tests/support/faults.py, `POST
                     /v1/test/faults/drop-link`; the browser keeps running) → the
                     caller's outcome_unknown answer                         ≤ 200 ms
  restart            a journal of 100,000 operations written with the Journal class (10 of
                     them left queued/dispatched, as a killed daemon leaves them): daemon
                     process start → first answer of GET /v1/ops/{a reconciled op}, with
                     BSK_JOURNAL_MAX_COUNT=200000 (all kept) and with the default (10,000:
                     90,000 to delete, which the daemon does in the background after it
                     starts answering; also timed: start → backlog deleted); and
                     `bsk op show ID` spawning it                            ≤ 1 s

    .venv/bin/python bench/interruption.py [N]      (N cancels of each kind, default 30)
    .venv/bin/python bench/interruption.py --restart-only   (only the restart part)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common

# The tests' fault seam, which a daemon loads when BSK_TEST_HOOK names it.
FAULT_SEAM = Path(__file__).resolve().parent.parent / "tests" / "support" / "faults.py"

N = 30
N_SLOW = 5  # compensation, kill, socket close: each costs a second or so
JOURNAL_OPS = 100_000


# -- HTTP over the daemon's socket (raw asyncio streams; one connection per waiting call) --


class Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, sock: str) -> Conn:
        return cls(*await asyncio.open_unix_connection(sock))

    async def call(self, method: str, path: str, body: Any = None,
                   headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
        payload = json.dumps(body).encode() if body is not None else b""
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self.writer.write(f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n{extra}"
                          f"Content-Type: application/json\r\nContent-Length: {len(payload)}"
                          f"\r\n\r\n".encode() + payload)
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        lines = head.split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
        answer = json.loads(await self.reader.readexactly(int(hdrs["content-length"])))
        return status, hdrs, answer

    def close(self) -> None:
        self.writer.close()


async def once(sock: str, method: str, path: str, body: Any = None,
               headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    conn = await Conn.open(sock)
    try:
        return await conn.call(method, path, body, headers)
    finally:
        conn.close()


class Api:
    """Control calls on one keep-alive connection; tool calls each on their own."""

    def __init__(self, sock: str, control: Conn, session: str) -> None:
        self.sock, self.control, self.session = sock, control, session
        self.seq = 0

    def op_id(self, tag: str) -> str:
        self.seq += 1
        return f"op_bench_{tag}_{self.seq}_{os.getpid()}"

    def start(self, tool: str, body: dict[str, Any], op_id: str
              ) -> asyncio.Task[tuple[int, dict[str, str], Any]]:
        return asyncio.ensure_future(once(self.sock, "POST",
                                          f"/v1/sessions/{self.session}/tools/{tool}", body,
                                          {"X-Op-Id": op_id}))

    async def get(self, path: str) -> Any:
        status, _, answer = await self.control.call("GET", path)
        if status >= 300:
            raise RuntimeError(f"GET {path}: {status} {answer}")
        return answer

    async def tool(self, tool: str, body: dict[str, Any]) -> Any:
        status, _, answer = await self.control.call(
            "POST", f"/v1/sessions/{self.session}/tools/{tool}", body)
        if status >= 300:
            raise RuntimeError(f"{tool}: {status} {answer}")
        return answer

    async def until(self, op_id: str, test: Any, what: str, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(RuntimeError):
                op = await self.get(f"/v1/ops/{op_id}")
                if test(op):
                    return op
            await asyncio.sleep(0.002)
        raise RuntimeError(f"timed out waiting for {op_id}: {what}")

    async def cancel(self, op_id: str) -> tuple[float, Any]:
        t0 = time.perf_counter()
        status, _, answer = await self.control.call("POST", f"/v1/ops/{op_id}/cancel")
        took = 1000 * (time.perf_counter() - t0)
        if status != 200:
            raise RuntimeError(f"cancel {op_id}: {status} {answer}")
        return took, answer


def state_is(state: str) -> Any:
    return lambda op: op["state"] == state


def stamp_of(timeline: list[list[Any]], event: str, last: bool = False) -> float:
    stamps = [common.stamp(e[0]) for e in timeline if e[1] == event]
    if not stamps:
        raise RuntimeError(f"no {event!r} in {timeline}")
    return stamps[-1] if last else stamps[0]


# -- cancels -------------------------------------------------------------------------------


async def queued_cancels(api: Api, n: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"answer": [], "caller": []}
    holder_id = api.op_id("holder")
    holder = api.start("eval", {"expression": "await slow('holder', 120000)"}, holder_id)
    await api.until(holder_id, state_is("dispatched"), "holder dispatched")
    for _ in range(n):
        op_id = api.op_id("queued")
        waiting = api.start("eval", {"expression": "window.effects += 1", "wait": True}, op_id)
        await api.until(op_id, state_is("queued"), "queued")
        t0 = time.perf_counter()
        took, answer = await api.cancel(op_id)
        status, _, ended = await waiting
        out["caller"].append(1000 * (time.perf_counter() - t0))
        out["answer"].append(took)
        if answer["cancel"] != "requested" or (ended["status"], ended["dispatched"]) != (
                "cancelled", "no") or status != 409:
            raise RuntimeError(f"queued cancel: {answer} / {status} {ended}")
    await api.cancel(holder_id)
    await holder
    effects = (await api.tool("eval", {"expression": "window.effects"}))["result"]["value"]
    if effects != 0:
        raise RuntimeError(f"a cancelled queued call ran: effects={effects}")
    return out


async def dispatched_cancels(api: Api, n: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"answer": [], "ended": [], "handover": []}
    for _ in range(n):
        op_id, next_id = api.op_id("running"), api.op_id("next")
        running = api.start("eval", {"expression": "await slow('r', 120000)"}, op_id)
        await api.until(op_id, state_is("dispatched"), "dispatched")
        follower = api.start("eval", {"expression": "1", "wait": True}, next_id)
        await api.until(next_id, state_is("queued"), "follower queued")
        t0 = time.perf_counter()
        took, answer = await api.cancel(op_id)
        _, _, ended = await running
        out["ended"].append(1000 * (time.perf_counter() - t0))
        out["answer"].append(took)
        if answer["cancel"] != "requested" or answer["state"] == "ended":
            raise RuntimeError(f"dispatched cancel answered {answer}")
        if ended["status"] != "outcome_unknown":
            raise RuntimeError(f"cancelled eval ended {ended}")
        await follower
        shown = await api.get(f"/v1/ops/{next_id}")
        gap = stamp_of(shown["timeline"], "dispatched") - common.stamp(ended["ended_at"])
        out["handover"].append(1000 * gap)
    return out


async def compensated_cancels(api: Api, base: str, n: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"answer": [], "compensation": [], "handover": []}
    await api.tool("open", {"url": f"{base}/slow-input.html"})
    snap = (await api.tool("snapshot", {}))["result"]["snapshot"]
    match = re.search(r'"Slow press"[^\n]*\[ref=(\w+)\]', snap)
    if not match:
        raise RuntimeError(f"no Slow press button in {snap}")
    for _ in range(n):
        op_id, next_id = api.op_id("click"), api.op_id("after")
        clicking = api.start("click", {"ref": match.group(1)}, op_id)
        await api.until(op_id, lambda op: any(e[1:] == ["step", "mousePressed"]
                                              for e in op["timeline"]), "mousePressed sent")
        follower = api.start("eval", {"expression": "1", "wait": True}, next_id)
        await api.until(next_id, state_is("queued"), "follower queued")
        took, _ = await api.cancel(op_id)
        _, _, ended = await clicking
        comp = ended["error"]["details"].get("compensation", [])
        if not comp or not comp[0]["ok"] or ended["error"]["details"].get("cleanup"):
            raise RuntimeError(f"compensation did not run as planned: {ended}")
        await follower
        shown_click = await api.get(f"/v1/ops/{op_id}")
        shown_next = await api.get(f"/v1/ops/{next_id}")
        cancel_at = stamp_of(shown_click["timeline"], "cancel_requested")
        comp_end = stamp_of(shown_click["timeline"], "compensation", last=True)
        out["answer"].append(took)
        out["compensation"].append(1000 * (comp_end - cancel_at))
        out["handover"].append(1000 * (stamp_of(shown_next["timeline"], "dispatched")
                                       - comp_end))
        await api.tool("eval", {"expression": "window.events = []"})
    return out


# -- lost browser --------------------------------------------------------------------------


async def lost_browser(api: Api, base: str, n: int, how: str) -> list[float]:
    """Kill the browser (or drop its socket) with an eval in flight; time to its answer."""
    samples = []
    for _ in range(n):
        status = await api.get("/v1/status")
        pid = status["browser"]["pid"]
        op_id = api.op_id(how)
        running = api.start("eval", {"expression": "await slow('doomed', 120000)"}, op_id)
        await api.until(op_id, state_is("dispatched"), "dispatched")
        await asyncio.sleep(0.05)  # the command is in the browser, not just sent
        t0 = time.perf_counter()
        if how == "kill":
            os.killpg(pid, signal.SIGKILL)
        else:
            code, _, dropped = await api.control.call("POST", "/v1/test/faults/drop-link")
            if code != 200 or not dropped["dropped"]:
                raise RuntimeError(f"drop-link: {code} {dropped}")
        _, _, ended = await running
        samples.append(1000 * (time.perf_counter() - t0))
        if ended["status"] != "outcome_unknown":
            raise RuntimeError(f"{how}: the call ended {ended}")
        await api.tool("tab_new", {"url": f"{base}/counter.html"})  # relaunches
    return samples


# -- restart with a big journal --------------------------------------------------------------


def journal_file(home: Path) -> Path:
    from browserskill.base import paths

    return paths.journal_path(home)


def fill_journal(home: Path, count: int) -> list[str]:
    """`count` operations written through the Journal class; the last ten are left open
    (five queued, five dispatched) as a daemon killed mid-call leaves them."""
    from browserskill.base.errors import BskError
    from browserskill.dispatch.journal import Journal
    from browserskill.session.operations import DISPATCHED, Operation

    async def fill() -> list[str]:
        journal = Journal(journal_file(home), max_count=10 * count)
        now = time.time()
        open_ids = []
        journal.db.execute("BEGIN")
        for i in range(count):
            op = Operation(f"s{i % 50}", ("eval", "click", "snapshot", "open")[i % 4],
                           {"expression": f"window.x = {i}"},
                           idempotency_key=f"k{i}" if i % 10 == 0 else None,
                           created_at=now - 3 * 86400 * (count - i) / count)
            if i >= count - 10:
                if i % 2:
                    op.state = DISPATCHED
                    op.note(DISPATCHED)
                open_ids.append(op.op_id)
            else:
                op.note(DISPATCHED)
                if i % 7:
                    op.complete({"ok": True, "type": "number", "value": i}, retry_safe=False)
                else:
                    op.fail(BskError("action_failed", "covered", details={"reason": "covered"}))
            journal.record(op)
        journal.db.execute("COMMIT")
        journal.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        journal.close()
        return open_ids

    return asyncio.run(fill())


def first_answer_ms(home: Path, path: str, env: dict[str, str],
                    then: Any = None) -> tuple[float, Any]:
    """Start the daemon process; poll its socket; ms until GET `path` answers. `then(sock,
    t0)`, if given, runs after the answer, before the daemon is stopped."""
    sock = str(home / "bsk.sock")
    log = open(home / "bench-daemon.log", "ab")  # closed below
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(common.PYTHON), "-m", "browserskill.api"], env=env,
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the daemon exited {proc.returncode}; see {log.name}")
            try:
                status, _, answer = asyncio.run(once(sock, "GET", path))
                took = 1000 * (time.perf_counter() - t0)
                break
            except (OSError, asyncio.IncompleteReadError):
                time.sleep(0.002)
            if time.perf_counter() - t0 > 60:
                raise RuntimeError("the daemon did not answer within 60 s")
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {answer}")
        if then is not None:
            then(sock, t0)
        return took, answer
    finally:
        with contextlib.suppress(Exception):
            asyncio.run(once(sock, "POST", "/v1/daemon/stop"))
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait(10)
        log.close()


def restarts(rounds: int = 5) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"warm-up": [], "empty": [], "kept": [], "cli": [],
                                   "pruned": [], "pruned-done": [], "pruning-at-answer": []}

    def backlog(sock: str, t0: float) -> None:
        """Right after the first answer: was the backlog still being deleted? Then poll
        until it is gone (start → backlog deleted)."""
        first = None
        while True:
            _, _, info = asyncio.run(once(sock, "GET", "/v1/daemon"))
            first = first or info["journal"]
            if not info["journal"]["pruning"]:
                break
            time.sleep(0.01)
        out["pruned-done"].append(1000 * (time.perf_counter() - t0))
        out["pruning-at-answer"].append(float(first["pruning"]))
        if info["journal"]["pruned"] != JOURNAL_OPS - 10_000:
            raise RuntimeError(f"pruned {info['journal']} of {JOURNAL_OPS:,}")
    work = Path(tempfile.mkdtemp(prefix="bsk-bench-j-"))
    try:
        pristine = work / "pristine"
        pristine.mkdir(mode=0o700)
        t0 = time.perf_counter()
        open_ids = fill_journal(pristine, JOURNAL_OPS)
        print(f"  journal of {JOURNAL_OPS:,} operations written in "
              f"{time.perf_counter() - t0:.1f} s "
              f"({journal_file(pristine).stat().st_size / 2**20:.0f} MiB)")
        base_env = {**os.environ, "BSK_EPHEMERAL": "1", "BSK_IDLE_TIMEOUT": "0",
                    "PYTHONPYCACHEPREFIX": str(work / "pycache")}
        base_env.pop("PYTHONDONTWRITEBYTECODE", None)
        keep_all = {"BSK_JOURNAL_MAX_COUNT": "200000"}
        target = open_ids[1]  # left dispatched: reconciled to outcome_unknown
        # warm-up: the first start compiles byte-code into the cache; not counted.
        plan = (("warm-up", {}, 1), ("empty", {}, rounds), ("kept", keep_all, rounds),
                ("cli", keep_all, rounds), ("pruned", {}, rounds))
        for kind, env_extra, count in plan:
            for r in range(count):
                home = work / f"{kind}{r}"
                home.mkdir(mode=0o700)
                if kind not in ("warm-up", "empty"):
                    shutil.copy(journal_file(pristine), journal_file(home))
                env = {**base_env, **env_extra, "BSK_HOME": str(home)}
                if kind == "cli":  # what an agent sees: any bsk call starts the daemon
                    took, _, cp = common.timed_ms([str(common.BSK), "--json", "op", "show",
                                                   target], env=env)
                    answer = json.loads(cp.stdout)
                    subprocess.run([str(common.BSK), "daemon", "stop"], env=env,
                                   capture_output=True, timeout=60)
                elif kind in ("warm-up", "empty"):
                    took, answer = first_answer_ms(home, "/v1/health", env)
                else:
                    took, answer = first_answer_ms(home, f"/v1/ops/{target}", env,
                                                   backlog if kind == "pruned" else None)
                if kind not in ("warm-up", "empty") and (
                        answer.get("status") != "outcome_unknown"
                        or not answer["error"]["details"].get("reconciled")):
                    raise RuntimeError(f"{kind}: the reconciled op answered {answer}")
                out[kind].append(took)
                shutil.rmtree(home, ignore_errors=True)
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- main ------------------------------------------------------------------------------------


async def run_cancels(sock: str, base: str, n: int) -> dict[str, dict[str, list[float]]]:
    control = await Conn.open(sock)
    try:
        api = Api(sock, control, "default")
        await api.tool("open", {"url": f"{base}/counter.html"})
        return {"queued": await queued_cancels(api, n),
                "dispatched": await dispatched_cancels(api, n),
                "compensated": await compensated_cancels(api, base, N_SLOW)}
    finally:
        control.close()


async def run_lost(sock: str, base: str, how: str) -> list[float]:
    control = await Conn.open(sock)
    try:
        api = Api(sock, control, "default")
        await api.tool("open", {"url": f"{base}/counter.html"})
        return await lost_browser(api, base, N_SLOW, how)
    finally:
        control.close()


def main(n: int = N, restart_only: bool = False) -> int:
    common.exit_on_sigterm()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]
    common.header("Interruption: cancel answers, handover, lost browser, restart")
    ok = restart_only or cancels_and_lost(n)
    return 0 if restart() and ok else 1


def cancels_and_lost(n: int) -> bool:
    ok = True
    with common.fixture_sites() as (base, _):
        with common.BskDaemon() as bsk:
            cancels = asyncio.run(run_cancels(bsk.socket, base, n))
            killed = asyncio.run(run_lost(bsk.socket, base, "kill"))
        seam = common.BskDaemon()
        seam.env["BSK_TEST_HOOK"] = str(FAULT_SEAM)
        with seam:
            dropped = asyncio.run(run_lost(seam.socket, base, "drop"))
    q, d, c = cancels["queued"], cancels["dispatched"], cancels["compensated"]
    print(common.describe("queued: cancel answered", q["answer"], digits=2))
    print(common.describe("queued: caller's answer", q["caller"], digits=2))
    print(common.describe("dispatched: cancel answered", d["answer"], digits=2))
    print(common.describe("dispatched: caller's answer", d["ended"], digits=2))
    print(common.describe("dispatched: end -> next dispatch", d["handover"], digits=0))
    print(common.describe("compensated: cancel answered", c["answer"], digits=2))
    print(common.describe("compensated: cancel -> comp. end", c["compensation"], digits=0))
    print(common.describe("compensated: comp. end -> next", c["handover"], digits=0))
    print(common.describe("browser kill -> outcome_unknown", killed, digits=1))
    print(common.describe("socket close -> outcome_unknown", dropped, digits=1))
    ok &= common.verdict("queued cancel answer (median)", common.median(q["answer"]), 20)
    ok &= common.verdict("dispatched cancel answer (median)", common.median(d["answer"]), 20)
    ok &= common.verdict("handover after the end (median)", common.median(d["handover"]), 20)
    ok &= common.verdict("handover after compensation (median)",
                         common.median(c["handover"]), 20)
    ok &= common.verdict("browser kill -> outcome_unknown (median)", common.median(killed),
                         200)
    ok &= common.verdict("socket close -> outcome_unknown (median)", common.median(dropped),
                         200)
    return ok


def restart() -> bool:
    r = restarts()
    print(common.describe("restart, empty journal", r["empty"], digits=0))
    print(common.describe("restart, 100k ops: first answer", r["kept"], digits=0))
    print(common.describe("`bsk op show` spawning it (100k)", r["cli"], digits=0))
    print("  (the CLI figure adds the client's start and its spawn; for information)")
    print(common.describe("default max count: first answer", r["pruned"], digits=0))
    print(common.describe("default max count: backlog deleted", r["pruned-done"], digits=0))
    print(f"  (default BSK_JOURNAL_MAX_COUNT=10000: 90,000 rows to delete, in batches in the "
          f"background; still deleting at the first answer in "
          f"{sum(r['pruning-at-answer']):.0f} of {len(r['pruned'])} starts)")
    ok = common.verdict("restart with 100k ops -> first answer (median)",
                        common.median(r["kept"]), 1000)
    ok &= common.verdict("restart, 100k ops, default max count -> first answer (median)",
                         common.median(r["pruned"]), 1000)
    return ok


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--restart-only"]
    only = len(args) < len(sys.argv) - 1
    common.run_main(lambda *n: main(*n, restart_only=only), *(int(a) for a in args[:1]))
