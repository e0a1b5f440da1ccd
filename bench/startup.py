"""Start-up as the user feels it: from starting the `gaudi-tui` console script to the 8-card map
painted with its cards (the fake hl-smi, no added delay), against a minimal Textual app that does the
same work the plain way: started as a console script the same way, it runs the same hl-smi query
once in a thread and draws an 8-row table of the map's 13 columns with its status line. That pair is
the headline ratio. Beside it: the first frame (the skeleton: gaudi-tui's status line under the
header, before any card) against the minimal app's whole screen ("hello"), and the fake hl-smi's own
time to its first output.

Each program runs in a fresh interpreter on a pseudo-terminal (100×30, xterm-256color); the time is
from just before the spawn to the moment the terminal has received the marker text: "8 cards via
hl-smi" for the map and for the table (both print it in the frame that draws the rows); for the first
frame a text of the screen's body, under the header ("hello"; gaudi-tui's status line "… · sort:
index", there from the first frame on whatever the cards), so a frame of the header alone does not
count. Both programs' first frames have an empty footer bar (Textual composes a footer's keys after
it); the moment the keys are drawn ("^p palette", the key both footers end with) is printed too. The
console scripts of the minimal apps are written exactly like the one pip writes for `gaudi-tui`, for
the same interpreter, and the project's modules are byte-compiled first, as `pip install` leaves them
(the minimal app's Textual already is; with PYTHONDONTWRITEBYTECODE set, the project would otherwise be
compiled from source at every start). After one untimed start of each, runs alternate between the
two programs of a pair (the order swapped every run), and each ratio is taken within a pair. Beside
the wall time, the CPU time each program has used when it hands its first frame to Textual's output
thread is printed (the same console scripts, run through a hook that notes `time.process_time()` at
that write): it holds still on a loaded machine, where the wall time does not. Target: ratio ≤ 1.2.
gaudi-tui starts its hl-smi query before it loads Textual (`core/devices/early_query.py`); the
minimal app starts it once its screen is mounted, the plain way: that head start is the product's,
left in. This fake answers in ~25 ms, so its answer is there when the Devices screen is composed and
gaudi-tui's first frame is the map; an hl-smi slower than Textual's loading (~170 ms here) leaves the
first frame the skeleton, and the map follows when the feed reads the answer.
Exit 1 only when it could not measure.
"""

from __future__ import annotations

import compileall
import os
import pty
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))  # bench/common
from common.home import own_home  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "9"))
TIMEOUT_S = 60.0
FAKE_BIN = ROOT / "tests" / "fakes" / "bin"

FIRST_FRAME = {"minimal": "hello", "gaudi": "sort: index"}
FOOTER_KEYS = "palette"

MINIMAL_APP = """\
from textual.app import App
from textual.widgets import Footer, Header, Static


class Minimal(App):
    TITLE = "minimal-app"
    BINDINGS = [("q", "quit", "Quit")]

    def compose(self):
        yield Header()
        yield Static("hello")
        yield Footer()


def main():
    return Minimal().run()
"""


MINIMAL_TABLE_APP = """\
import subprocess

from textual import work
from textual.app import App
from textual.widgets import DataTable, Footer, Header, Static

FIELDS = ("index,module_id,bus_id,name,uuid,driver_version,utilization.aip,memory.used,memory.total,"
          "power.draw,power.max,temperature.aip,ecc.errors.uncorrected.volatile.total")
COLUMNS = (" ", "Idx", "Mod", "Card", "Util", "HBM rsvd", "Power", "Temp", "ECC", "Link", "Holder", "NUMA", "Bus")


class MinimalTable(App):
    TITLE = "minimal-table"
    BINDINGS = [("q", "quit", "Quit")]

    def compose(self):
        yield Header()
        yield Static("reading hl-smi", id="status")
        yield DataTable()
        yield Footer()

    def on_mount(self):
        self.query_one(DataTable).add_columns(*COLUMNS)
        self.read()

    @work(thread=True)
    def read(self):
        out = subprocess.run(["hl-smi", "-Q", FIELDS, "-f", "csv,noheader,nounits"],
                             capture_output=True, text=True).stdout
        self.call_from_thread(self.show, [line.split(", ") for line in out.splitlines() if line.strip()])

    def show(self, rows):
        table = self.query_one(DataTable)
        for r in rows:
            table.add_row(" ", r[0], r[1], r[3], f"{r[6]} %", f"{r[7]}/{r[8]} MiB", f"{r[9]}/{r[10]} W",
                          f"{r[11]} C", r[12], "-", "-", "-", r[2])
        self.query_one("#status", Static).update(f"{len(rows)} cards via hl-smi")


def main():
    return MinimalTable().run()
"""
MAP = "8 cards via hl-smi"


def console_script(python: str, module: str) -> str:
    """The wrapper pip writes for a `[project.scripts]` entry (see .venv/bin/gaudi-tui)."""
    return (
        f"#!{python}\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom {module} import main\n"
        "if __name__ == '__main__':\n"
        "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
        "    sys.exit(main())\n"
    )


CPU_HOOK = """\
import os, sys, time
from textual.drivers._writer_thread import WriterThread
write, marker, out = WriterThread.write, os.environ["BENCH_MARKER"], os.environ["BENCH_CPU_FILE"]
def noted(self, text):
    if marker in text and not os.path.exists(out):
        with open(out, "w") as f:
            f.write(str(time.process_time()))
    return write(self, text)
WriterThread.write = noted
sys.argv = [sys.argv[1]]
with open(sys.argv[0]) as script:
    exec(compile(script.read(), sys.argv[0], "exec"), {"__name__": "__main__"})
"""


def cpu_to_frame(script: Path, marker: str, env: dict[str, str], work: Path) -> float:
    """CPU seconds the program had used when it wrote its first frame (the hook above)."""
    out = work / "cpu.txt"
    out.unlink(missing_ok=True)
    hook = work / "cpu_hook.py"
    hook.write_text(CPU_HOOK)
    time_to(
        [sys.executable, str(hook), str(script)],
        [marker],
        dict(env, BENCH_MARKER=marker, BENCH_CPU_FILE=str(out)),
    )
    return float(out.read_text())


def time_to(argv: list[str], markers: list[str], env: dict[str, str]) -> list[float]:
    """Seconds from spawn until each marker has appeared on the terminal; then quit with q."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a terminal of 100×30
        os.execve(argv[0], argv, env)
    start = time.perf_counter()
    os.set_blocking(fd, False)
    _set_size(fd)
    seen = b""
    found: list[float] = []
    try:
        while len(found) < len(markers):
            if time.perf_counter() - start > TIMEOUT_S:
                raise RuntimeError(
                    f"{argv[0]}: {markers[len(found)]!r} did not appear: {_plain(seen)[-400:]}"
                )
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    seen += os.read(fd, 1 << 16)
                except OSError:
                    raise RuntimeError(f"{argv[0]} exited: {_plain(seen)[-400:]}") from None
                plain = _plain(seen)  # Textual may write a word in two styled segments ("palett", "e")
                while len(found) < len(markers) and markers[len(found)] in plain:
                    found.append(time.perf_counter() - start)
        os.write(fd, b"q")
        _reap(pid, fd)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(fd)
    return found


def _set_size(fd: int) -> None:
    import fcntl
    import struct
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))


def _reap(pid: int, fd: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.read(fd, 1 << 16)
        except OSError:
            pass
        if os.waitpid(pid, os.WNOHANG) != (0, 0):
            return
        time.sleep(0.05)


def _plain(data: bytes) -> str:
    return re.sub(r"\x1b\[[0-9;?<>=]*[A-Za-z]", "", data.decode(errors="replace"))


def fake_first_output(env: dict[str, str]) -> float:
    """The fake hl-smi's own time from spawn to its first line (the CSV loop the monitor runs)."""
    argv = [str(FAKE_BIN / "hl-smi"), "-Q", "index,name", "-f", "csv,noheader,nounits", "-l", "1"]
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env)
    assert child.stdout is not None
    child.stdout.readline()
    first = time.perf_counter() - start
    child.kill()
    child.wait(5)
    child.stdout.close()
    return first


def spread(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{statistics.median(ms):.0f} ms (min {min(ms):.0f}, max {max(ms):.0f})"


def ratio_spread(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})"


def main() -> int:
    python = sys.executable
    gaudi = Path(python).parent / "gaudi-tui"
    if not gaudi.exists():
        print(f"no console script at {gaudi}: run `make install` first", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="gaudi-tui-bench-"))
    (work / "minimal_app.py").write_text(MINIMAL_APP)
    minimal = work / "minimal-app"
    minimal.write_text(console_script(python, "minimal_app"))
    minimal.chmod(0o755)
    (work / "minimal_table.py").write_text(MINIMAL_TABLE_APP)
    table = work / "minimal-table"
    table.write_text(console_script(python, "minimal_table"))
    table.chmod(0o755)
    own_home(path=work / "home")
    base = dict(
        os.environ, TERM="xterm-256color", COLUMNS="100", LINES="30", GAUDI_TUI_HOME=str(work / "home")
    )
    base.pop("NO_COLOR", None)
    minimal_env = dict(base, PYTHONPATH=str(work))
    plain_env = dict(base, PATH=os.pathsep.join([str(Path(python).parent), "/usr/bin", "/bin"]))
    fake_env = dict(
        base,
        PATH=os.pathsep.join([str(FAKE_BIN), str(Path(python).parent), base.get("PATH", "")]),
        FAKE_HLSMI_SAMPLES_DIR=str(ROOT / "gaudi_tui" / "data" / "hl-smi"),
    )
    for name in [n for n in fake_env if n.startswith("FAKE_HLSMI_") and n != "FAKE_HLSMI_SAMPLES_DIR"]:
        del fake_env[name]
    table_env = dict(fake_env, PYTHONPATH=str(work))

    compileall.compile_dir(ROOT / "gaudi_tui", quiet=1)
    firsts: dict[str, list[float]] = {
        "minimal_cpu": [],
        "gaudi_cpu": [],
        "minimal": [],
        "gaudi": [],
        "minimal_keys": [],
        "gaudi_keys": [],
        "gaudi_map_first": [],
        "map": [],
        "table": [],
        "fake": [],
    }
    try:
        time_to([str(minimal)], [FIRST_FRAME["minimal"]], minimal_env)  # warm the file cache
        time_to([str(gaudi)], [FIRST_FRAME["gaudi"]], plain_env)
        time_to([str(table)], [MAP], table_env)
        time_to([str(gaudi)], [MAP], fake_env)
        for run in range(RUNS):  # alternate, the order swapped every run, so drifting load hits both alike

            def skeleton(name: str, script: Path, env: dict[str, str]) -> None:
                first, keys = time_to([str(script)], [FIRST_FRAME[name], FOOTER_KEYS], env)
                firsts[name].append(first)
                firsts[f"{name}_keys"].append(keys)

            def with_cards() -> None:
                first, painted = time_to([str(gaudi)], [FIRST_FRAME["gaudi"], MAP], fake_env)
                firsts["gaudi_map_first"].append(first)
                firsts["map"].append(painted)

            def with_table() -> None:
                firsts["table"].append(time_to([str(table)], [MAP], table_env)[0])

            steps = [
                lambda: skeleton("minimal", minimal, minimal_env),
                lambda: skeleton("gaudi", gaudi, plain_env),
                with_table,
                with_cards,
            ]
            order = steps if run % 2 == 0 else [steps[1], steps[0], steps[3], steps[2]]
            for step in order:
                step()
            firsts["minimal_cpu"].append(cpu_to_frame(minimal, FIRST_FRAME["minimal"], minimal_env, work))
            firsts["gaudi_cpu"].append(cpu_to_frame(gaudi, FIRST_FRAME["gaudi"], plain_env, work))
            firsts["fake"].append(fake_first_output(fake_env))
    except (RuntimeError, OSError) as error:
        print(f"could not measure: {error}", file=sys.stderr)
        return 1
    ratios = [g / m for g, m in zip(firsts["gaudi"], firsts["minimal"], strict=True)]
    map_ratios = [g / m for g, m in zip(firsts["map"], firsts["table"], strict=True)]
    cpu_ratios = [g / m for g, m in zip(firsts["gaudi_cpu"], firsts["minimal_cpu"], strict=True)]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"start-up on a 100×30 pseudo-terminal, {RUNS} alternating runs, load average {load}")
    print(f"  gaudi-tui (console script, fake hl-smi) to the 8-card map painted: {spread(firsts['map'])}")
    print(
        f"  minimal Textual app running the same hl-smi query to its 8-row table: {spread(firsts['table'])}"
    )
    print(f"  ratio {ratio_spread(map_ratios)} (the headline; target ≤ 1.2; per-run pairs)")
    print(f"  skeleton: minimal Textual app (console script) to first frame: {spread(firsts['minimal'])}")
    print(f"  skeleton: gaudi-tui (console script, no hl-smi) to first frame: {spread(firsts['gaudi'])}")
    print(f"  skeleton ratio {ratio_spread(ratios)} (per-run pairs)")
    print(
        f"  … to the footer's keys: minimal {spread(firsts['minimal_keys'])}, gaudi-tui "
        f"{spread(firsts['gaudi_keys'])}"
    )
    print(
        f"  CPU time to the first frame's write: minimal {spread(firsts['minimal_cpu'])}, gaudi-tui "
        f"{spread(firsts['gaudi_cpu'])}, ratio {ratio_spread(cpu_ratios)}"
    )
    print(f"  gaudi-tui with the fake hl-smi: first frame {spread(firsts['gaudi_map_first'])}")
    print(f"  the fake hl-smi's own time to its first output line: {spread(firsts['fake'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
