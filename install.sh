#!/usr/bin/env bash
# Install SpecSnap, Snakemake and the test tools into the active Python environment, and
# bubblewrap (the default sandbox) from the system's packages where it is missing.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v bwrap >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq && $sudo apt-get install -y -qq bubblewrap
  else
    echo "install.sh: bubblewrap is not installed and this system has no apt-get;" \
         "install the 'bubblewrap' package yourself, or runs fall back to the unisolated local backend" >&2
  fi
fi

# The docker sandbox backend (docs/containers.md): Debian's engine and debootstrap, which builds its
# base image from Debian's packages (no image registry needed). The engine is not started here:
# `containers/engine.sh start` (as root) starts it without touching the host's firewall.
# SPECSNAP_SKIP_DOCKER=1 skips this step (bwrap is the default backend and needs neither).
if [ "${SPECSNAP_SKIP_DOCKER:-0}" != 1 ] && ! { command -v dockerd >/dev/null 2>&1 && command -v debootstrap >/dev/null 2>&1; }; then
  if command -v apt-get >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq docker.io debootstrap
  else
    echo "install.sh: no apt-get here; install a Docker engine and debootstrap yourself to use the docker backend" >&2
  fi
fi

# SLURM and munge, for the one-node local cluster (cluster/slurm-local.sh) that tries
# workflow/profiles/slurm and that tests/test_slurm.py runs a study on. Only the packages are
# installed; nothing is started. SPECSNAP_SKIP_CLUSTER=1 skips this step (a real cluster, or no root).
if [ "${SPECSNAP_SKIP_CLUSTER:-0}" != 1 ] && command -v apt-get >/dev/null 2>&1 \
    && ! dpkg -s slurm-wlm munge >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo apt-get install -y -qq slurm-wlm munge
fi

# Headless Chromium, which the report's browser test drives (tests/test_report.py, through Playwright
# for Python pointed at this binary: Playwright's own browser download needs the internet).
# SPECSNAP_SKIP_BROWSER=1 skips this step; the report itself needs no browser to be written.
if [ "${SPECSNAP_SKIP_BROWSER:-0}" != 1 ] && ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium
fi

python3 -m pip install --disable-pip-version-check -q -e ".[dev]"

# The real agent CLIs (harnesses/pins.yaml: Claude Code, Codex, Gemini CLI, opencode via npm;
# Aider, mini-swe-agent via PyPI, each in its own virtualenv), cached under
# $SPECSNAP_HARNESS_HOME (default ~/.cache/specsnap/harnesses): a pin already in place is skipped.
# SPECSNAP_SKIP_HARNESSES=1 skips this step (the reference-policy studies do not need them).
if [ "${SPECSNAP_SKIP_HARNESSES:-0}" != 1 ]; then
  if ! command -v npm >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq && $sudo apt-get install -y -qq nodejs npm
  fi
  python3 -m sdcs_bench.cli install-harnesses
fi
echo "SpecSnap installed: run \`snakemake --cores 2\` for the smoke study, \`pytest\` for the tests."
