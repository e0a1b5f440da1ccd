#!/usr/bin/env bash
# Install what the tests need beyond Python: tmux (terminal tests), prometheus (the Fleet tests;
# the Debian package also provides promtool) and Slurm with munge (the Slurm tests start a real
# two-node cluster on loopback: slurmctld, slurmd, slurm-client, munge; 8 packages, a few seconds).
# Called by `make test`. Quick when all are present.
# Without root or password-less sudo, or without apt, it says which tests will skip and why, and
# exits 0; under CI=true (or GAUDI_TUI_REQUIRE=all) those tests are required, so it exits 1 instead.
set -uo pipefail

need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v slurmctld >/dev/null 2>&1 || need+=(slurmctld)
command -v slurmd >/dev/null 2>&1 || need+=(slurmd)
command -v sbatch >/dev/null 2>&1 || need+=(slurm-client)
command -v munged >/dev/null 2>&1 || need+=(munge)
[ ${#need[@]} -eq 0 ] && exit 0

skip_note() {
  if [ "${CI:-}" = "true" ] || [ "${GAUDI_TUI_REQUIRE:-}" = "all" ]; then
    echo "install-system: $1; CI needs ${need[*]} (install with: sudo apt-get install ${need[*]})" >&2
    exit 1
  fi
  echo "install-system: $1; tests needing ${need[*]} will skip (install with: sudo apt-get install ${need[*]})" >&2
  case " ${need[*]} " in *" slurm"*|*" munge "*)
    echo "install-system: the Slurm tests (tests/slurm: a real loopback cluster) will skip; they also need root" >&2 ;;
  esac
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
# The Slurm packages' init scripts find no /etc/slurm/slurm.conf and start nothing (container
# images often deny them anyway); the tests start their own daemons on free ports.
if ! timeout 300 "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1; then
  timeout 300 "${sudo[@]}" apt-get update -qq >/dev/null 2>&1 || true
  timeout 300 "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1 \
    || skip_note "apt-get could not install them"
fi
exit 0
