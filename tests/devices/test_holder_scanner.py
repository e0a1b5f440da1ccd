"""The feed's holder scanner (`holders.HolderScanner`) against real processes holding a stand-in
node file: what shows at the next scan, what only at the next full scan, and what it never reads.

Linux ≥ 6.2 counts a process's fds in `stat(/proc/PID/fd).st_size`, and the scanner rereads only
the processes whose count changed. Older kernels (Debian 12's 6.1) do not: then every scan is a
full one. The tests marked BOTH run both ways (the fallback forced by a kernel check that says no);
the two that show the incremental scan's own behaviour (COUNTING) run on a counting kernel, or on
an older one with the count emulated from the fd folder's entries: every test runs on any kernel."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from gaudi_tui.core.devices import holders
from gaudi_tui.core.devices.holders import HolderScanner, find_holders
from tests import required
from tests.conftest import PYTHON

# A child that obeys one command a line and answers "ok": `open` opens the node, `close` closes it,
# `swap` puts the node on the fd of a /dev/null it holds (its fd count unchanged), `drop` puts a
# /dev/null on the node's fd (unchanged again).
CHILD = """
import os, sys
spare = os.open("/dev/null", os.O_RDONLY)
fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(int(sys.argv[2]))]
node = None
print("ready", flush=True)
for line in sys.stdin:
    command = line.strip()
    if command == "open":
        node = os.open(sys.argv[1], os.O_RDONLY)
    elif command == "close":
        os.close(node)
    elif command == "swap":
        fd = os.open(sys.argv[1], os.O_RDONLY)
        os.dup2(fd, spare)
        os.close(fd)
    elif command == "drop":
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, node)
        os.close(null)
    print("ok", flush=True)
"""

BOTH = pytest.mark.parametrize("fd_counts", ["kernel", "fallback"], indirect=True)


@pytest.fixture
def fd_counts(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """`kernel`: the scanner asks this kernel; `fallback`: /proc/PID/fd says size 0, as on Linux
    < 6.2, so the kernel check says no."""
    if request.param == "fallback":
        real = os.stat

        def stat(path: str, *args: object, **kwargs: object) -> os.stat_result:
            found = real(path, *args, **kwargs)  # type: ignore[arg-type]
            if str(path).startswith("/proc/") and str(path).endswith("/fd"):
                return os.stat_result((*found[:6], 0, *found[7:10]))
            return found

        monkeypatch.setattr(os, "stat", stat)
        assert not holders._counts_fds("/proc")
    return str(request.param)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernel that counts fds in /proc/PID/fd: this one (Linux ≥ 6.2), else the count emulated from
    the folder's entries, so the incremental scan's own tests run on Debian 12's 6.1 too."""
    if holders._counts_fds("/proc"):
        return "kernel"
    real = os.stat

    def stat(path: str, *args: object, **kwargs: object) -> os.stat_result:
        found = real(path, *args, **kwargs)  # type: ignore[arg-type]
        if str(path).startswith("/proc/") and str(path).endswith("/fd"):
            return os.stat_result((*found[:6], len(os.listdir(path)), *found[7:10]))
        return found

    monkeypatch.setattr(os, "stat", stat)
    assert holders._counts_fds("/proc")
    return "emulated"


COUNTING = pytest.mark.usefixtures("counting")


class Child:
    def __init__(self, node: Path, extra_fds: int = 0, python: str = PYTHON, **popen: object) -> None:
        self.process = subprocess.Popen(
            [python, "-c", CHILD, str(node), str(extra_fds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            **popen,  # type: ignore[call-overload]
        )
        assert self.read() == "ready"
        self.pid = self.process.pid

    def read(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def do(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        assert self.read() == "ok"

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(5)


@pytest.fixture
def node(tmp_path: Path) -> Path:
    path = tmp_path / "accel" / "accel4"
    path.parent.mkdir()
    path.touch()
    return path


def scanner(node: Path, full_every: float = 3600.0) -> HolderScanner:
    """Full scans only at the first scan unless `full_every` says otherwise."""
    return HolderScanner(node_pattern=rf"^{re.escape(str(node.parent))}/accel(\d+)$", full_every=full_every)


def pids(scan: HolderScanner) -> set[int]:
    return {h.pid for h in scan.scan()}


@pytest.fixture
def child(node: Path) -> Iterator[Child]:
    one = Child(node)
    yield one
    one.stop()


@BOTH
def test_a_process_that_opens_a_card_after_it_started_shows_at_the_next_scan(
    node: Path, child: Child, fd_counts: str
) -> None:
    scan = scanner(node)  # no full scan after the first: with a counting kernel, only the incremental one
    assert scan.counts_fds == (fd_counts == "kernel" and holders._counts_fds("/proc"))
    assert child.pid not in pids(scan)  # known now, holding nothing
    child.do("open")
    (holder,) = scan.scan()
    assert (holder.pid, holder.index, holder.device_path) == (child.pid, 4, str(node))
    assert holder.started == holders.start_time(child.pid)


@BOTH
def test_holders_that_close_drop_or_exit_are_gone_at_the_next_scan(node: Path, fd_counts: str) -> None:
    first, second, third = Child(node), Child(node), Child(node)
    try:
        for one in (first, second, third):
            one.do("open")
        scan = scanner(node)
        assert pids(scan) == {first.pid, second.pid, third.pid}
        first.do("close")
        second.do("drop")  # same fd count: found by rereading the fd that held the card
        third.stop()
        assert pids(scan) == set()
    finally:
        for one in (first, second, third):
            one.stop()


@COUNTING
def test_a_card_opened_while_another_fd_closed_shows_at_the_next_full_scan(
    node: Path, child: Child, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]  # the scanner's monotonic clock, moved by the test, not waited for
    monkeypatch.setattr(holders, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    scan = scanner(node, full_every=30.0)
    assert scan.counts_fds and pids(scan) == set()
    child.do("swap")  # fd count and process unchanged: the documented limit of the incremental scan
    clock[0] += 29.9
    assert pids(scan) == set()
    clock[0] += 0.1  # the next full scan is due
    assert pids(scan) == {child.pid}


@pytest.mark.parametrize("fd_counts", ["fallback"], indirect=True)
def test_without_fd_counts_every_scan_is_full(node: Path, child: Child, fd_counts: str) -> None:
    """Linux < 6.2: the swap the incremental scan misses until its next full scan shows at once,
    and every process's fds are read at every scan."""
    scan = scanner(node)
    assert not scan.counts_fds and pids(scan) == set()
    child.do("swap")  # fd count unchanged
    assert pids(scan) == {child.pid}
    read: list[str] = []
    real = os.readlink

    def readlink(path: str) -> str:
        read.append(path)
        return real(path)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "readlink", readlink)
        assert pids(scan) == {child.pid}
    fds = os.listdir(f"/proc/{child.pid}/fd")
    assert {p for p in read if p.startswith(f"/proc/{child.pid}/fd/")} == {
        f"/proc/{child.pid}/fd/{fd}" for fd in fds
    }


@BOTH
def test_a_new_process_opening_a_card_shows_at_the_next_scan(node: Path, fd_counts: str) -> None:
    scan = scanner(node)
    assert pids(scan) == set()
    new = Child(node)
    try:
        new.do("open")
        assert pids(scan) == {new.pid}
    finally:
        new.stop()


@COUNTING
def test_unchanged_processes_are_not_read_again(node: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    busy, holder = Child(node, extra_fds=200), Child(node, extra_fds=200)
    try:
        holder.do("open")
        scan = scanner(node)
        assert pids(scan) == {holder.pid}
        read: list[str] = []
        real = os.readlink

        def readlink(path: str) -> str:
            read.append(path)
            return real(path)

        monkeypatch.setattr(os, "readlink", readlink)
        assert pids(scan) == {holder.pid}
        assert not [p for p in read if p.startswith(f"/proc/{busy.pid}/")]
        card_fds = [f"/proc/{holder.pid}/fd/{fd}" for fd in scan._seen[holder.pid].held]
        assert [p for p in read if p.startswith(f"/proc/{holder.pid}/")] == card_fds  # only its card's fd
    finally:
        busy.stop()
        holder.stop()


@BOTH
def test_a_remembered_holder_with_another_start_time_is_read_again(
    node: Path, child: Child, fd_counts: str
) -> None:
    """A reused PID: the remembered holder's start time is not the process's, so its fds are read
    and the holder it reports has the process's own start time."""
    child.do("open")
    scan = scanner(node)
    (holder,) = scan.scan()
    seen = scan._seen[child.pid]
    old = holders.CardHolder(4, child.pid, "x", "old", 12.0, str(node))
    scan._seen[child.pid] = holders._Seen(seen.signal, seen.held, (old,))
    (again,) = scan.scan()
    assert again == holder and again.started != 12.0


@BOTH
def test_processes_that_come_and_go_mid_scan_are_skipped(node: Path, child: Child, fd_counts: str) -> None:
    child.do("open")
    scan = scanner(node, full_every=0.0)
    churn = subprocess.Popen(
        [
            "bash",
            "-c",
            "end=$((SECONDS + 1)); while [ $SECONDS -lt $end ]; do /bin/true & /bin/true; done; wait",
        ]
    )
    try:
        while churn.poll() is None:
            assert pids(scan) == {child.pid}
    finally:
        churn.kill()
        churn.wait(5)


def test_other_users_processes_are_not_holders_and_do_not_stop_the_scan() -> None:
    """Run as `nobody`, the scanner finds nobody's holder, not root's, whatever /proc refuses it."""
    if os.getuid() != 0:
        required.require("root", "running processes as user nobody needs root")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    python = next((p for p in (PYTHON, "/usr/bin/python3") if _scans_as_nobody(p, env)), None)
    if python is None:
        pytest.skip(
            f"no Python that user nobody may run with this checkout ({PYTHON} or the tree is not readable to nobody)"
        )
    folder = Path(tempfile.mkdtemp(prefix="gaudi-tui-holders-"))
    try:
        folder.chmod(0o755)
        (folder / "accel").mkdir(mode=0o755)
        node = folder / "accel" / "accel4"
        node.touch(mode=0o644)
        root_holder, nobody_holder = Child(node), Child(node, python=python, user="nobody")
        try:
            root_holder.do("open")
            nobody_holder.do("open")
            code = (
                "import sys\nfrom gaudi_tui.core.devices.holders import HolderScanner\n"
                "scan = HolderScanner(node_pattern=sys.argv[1])\n"
                "for _ in range(2):\n    print(sorted(h.pid for h in scan.scan()))\n"
            )
            pattern = rf"^{re.escape(str(node.parent))}/accel(\d+)$"
            out = subprocess.run(
                [python, "-c", code, pattern],
                user="nobody",
                env=env,
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert out.returncode == 0, out.stderr
            assert out.stdout.splitlines() == [f"[{nobody_holder.pid}]"] * 2
            assert {h.pid for h in find_holders(node_pattern=pattern)} == {root_holder.pid, nobody_holder.pid}
        finally:
            root_holder.stop()
            nobody_holder.stop()
    finally:
        for path in sorted(folder.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        folder.rmdir()


def _scans_as_nobody(python: str, env: dict[str, str]) -> bool:
    """Whether user nobody can run `python` and import the scanner from this checkout with it (a
    checkout under a home folder of mode 0700, or a Python without psutil, cannot)."""
    code = "from gaudi_tui.core.devices.holders import HolderScanner"
    try:
        done = subprocess.run([python, "-c", code], user="nobody", env=env, capture_output=True, timeout=30)
    except OSError:
        return False
    return done.returncode == 0
