#!/usr/bin/env bash
# Create the virtualenv and install gaudi-tui with its test tools.
# torch: an importable torch (a Gaudi image ships Intel's own build) is kept and pinned, so no
# dependency can replace it; only where none is importable is the CPU build torch==2.13.0 installed.
set -euo pipefail
python3=${1:-python3}
venv=${2:-.venv}
pip_quiet=(-q --disable-pip-version-check)

system_torch=$("$python3" -c 'import torch; print(torch.__version__)' 2>/dev/null || true)
if [ ! -x "$venv/bin/python" ]; then
  if [ -n "$system_torch" ]; then
    echo "install: keeping the system's torch $system_torch (venv sees system site-packages)"
    "$python3" -m venv --system-site-packages "$venv"
  else
    "$python3" -m venv "$venv"
  fi
fi
py="$venv/bin/python"
torch_version=$("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null || true)
if [ -z "$torch_version" ]; then
  echo "install: no torch found; installing the CPU build torch==2.13.0"
  "$py" -m pip install "${pip_quiet[@]}" torch==2.13.0
  torch_version=$("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null)
fi
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
echo "torch==$torch_version" > "$constraints"
"$py" -m pip install "${pip_quiet[@]}" -c "$constraints" -e ".[test]"
# An editable install leaves gaudi-tui's own modules uncompiled (pip compiles what it copies): done
# here, or with PYTHONDONTWRITEBYTECODE set every panel, job and engine process compiles them anew.
"$py" -m compileall -q -j 0 gaudi_tui >/dev/null
echo "install: done (torch $torch_version)"
