"""`gaudi-tui watch` as a command: bad input is a clear exit 2, SIGTERM ends it with exit 0, and
piped (not a terminal) it prints the alert lines without the escapes."""

from __future__ import annotations

import signal
import socket
import subprocess
import threading

from tests.alerts.conftest import configure, kept, wait_for
from tests.conftest import PYTHON, child_env


def watch(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PYTHON, "-m", "gaudi_tui", "watch", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=child_env(),
    )  # fmt: skip


def test_bad_input_is_a_clear_exit_2() -> None:
    for args, says in (
        (("--replay", "gaudi9"), "is neither a replay nor a file"),
        (("--interval", "0"), "--interval needs a positive number of seconds"),
    ):
        child = watch(*args)
        out, err = child.communicate(timeout=30)
        assert child.returncode == 2 and says in err and out == ""


def test_piped_it_prints_lines_without_escapes_and_sigterm_ends_it() -> None:
    configure(off=["hbm_full"])
    child = watch("--replay", "gaudi2-port-down", "--interval", "0.1")
    lines: list[str] = []
    assert child.stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(child.stdout), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        wait_for(lambda: any("Scale-out port down" in line for line in lines), 30, "the alert's line")
        child.send_signal(signal.SIGTERM)
        assert child.wait(15) == 0
    finally:
        child.kill()
    reader.join(5)
    child.communicate()  # closes the pipes
    assert lines[0].startswith("watching replay gaudi2-port-down and ") and "(terminal)" in lines[0]
    assert lines[1].endswith(
        f" CRITICAL Scale-out port down: {socket.gethostname()} card 3: port 8 is down\n"
    )
    assert not any("\x1b" in line or "\a" in line for line in lines) and len(kept("port_down")) == 1
