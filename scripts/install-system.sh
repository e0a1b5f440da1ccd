#!/usr/bin/env bash
# Install what the tests need beyond Python: tmux (terminal tests) and prometheus (the Fleet tests;
# the Debian package also provides promtool). Called by `make test`. Quick when both are present.
# Never fails the run: without root or password-less sudo, or without apt, it says which tests
# will skip and why, and exits 0.
set -uo pipefail

need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
[ ${#need[@]} -eq 0 ] && exit 0

skip_note() {
  echo "install-system: $1; tests needing ${need[*]} will skip (install with: sudo apt-get install ${need[*]})" >&2
  exit 0
}

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  skip_note "not root and no password-less sudo"
fi
command -v apt-get >/dev/null 2>&1 || skip_note "no apt-get on this system"

echo "install-system: installing ${need[*]} (apt-get)"
export DEBIAN_FRONTEND=noninteractive
if ! timeout 300 "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1; then
  timeout 300 "${sudo[@]}" apt-get update -qq >/dev/null 2>&1 || true
  timeout 300 "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1 \
    || skip_note "apt-get could not install them"
fi
exit 0
