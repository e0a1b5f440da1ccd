"""Record tests/fleet/data/federate-gaudi.txt: what a real Prometheus's /federate gives for three
`gaudi-tui exporter`s replaying real hl-smi samples and a target that never answers.

The fixture behind the Fleet screen's snapshot test and screenshot (`gaudi-tui fleet --input`).
Instances are renamed (gaudi-node-01…04; 04 never answers) so the file does not depend on the free ports picked.
Run: `.venv/bin/python tests/fleet/record_federate.py` (needs `prometheus` on PATH).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.fleet.stack import (  # noqa: E402
    REPLAYED,
    Exporter,
    free_port,
    prometheus_config,
    silent_target,
    start_prometheus,
    stop,
    wait_http,
)

OUT = Path(__file__).resolve().parent / "data" / "federate-gaudi.txt"
NAMES = ("gaudi-node-01:41612", "gaudi-node-02:41612", "gaudi-node-03:41612", "gaudi-node-04:41612")


def main() -> int:
    workdir = Path(tempfile.mkdtemp(prefix="gaudi-tui-record-"))
    silent = silent_target()
    exporters = [Exporter(sample, free_port(), workdir) for sample in REPLAYED]
    prometheus = None
    try:
        for exporter in exporters:
            exporter.start()
        targets = [e.instance for e in exporters] + [f"127.0.0.1:{silent.getsockname()[1]}"]
        prometheus, url = start_prometheus(
            prometheus_config(targets, dict(zip(targets, NAMES, strict=True))), workdir
        )
        wait_http(f"{url}/api/v1/query?query=count(up)%20%3D%3D%204", 60, want='"value"')
        time.sleep(3)  # a few scrapes of every target
        query = urllib.parse.urlencode({"match[]": '{job="gaudi"}'})
        with urllib.request.urlopen(f"{url}/federate?{query}", timeout=10) as answer:
            text = answer.read().decode()
        lines = [
            line.rsplit(" ", 1)[0] + " 1700000000000" if not line.startswith("#") else line
            for line in text.splitlines()
        ]
        OUT.write_text("\n".join(lines) + "\n")
        print(f"wrote {OUT.relative_to(ROOT)} ({len(lines)} lines)")
    finally:
        if prometheus is not None:
            stop(prometheus)
        for exporter in exporters:
            if exporter.process is not None:
                stop(exporter.process)
        silent.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
