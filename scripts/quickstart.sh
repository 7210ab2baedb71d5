#!/usr/bin/env bash
# The main job on the embedded default, for a new user: set up .venv with what the main job needs
# (the project with torch; none of the test tooling, which scripts/test.sh installs), `det deploy
# local up` (a master with SQLite and shared_fs checkpoints under .data/, plus one agent whose
# tasks run in the task venv .data/task-venv, never in .venv), submit examples/hello, show the
# trial's progress until the experiment COMPLETES, and describe it and its trial with their
# metrics. Every step is announced with the time elapsed since the start. A second run reuses
# what the first built (setup is then about a second) and what is already running.
#
# The deployment keeps running afterwards (logs: .data/logs/); `bash scripts/quickstart.sh stop`
# stops it. Settings (README.md, "Quick start settings"):
#   RESOLUTE_PORT                the master's port (8080)
#   RESOLUTE_DATA_DIR            the deployment's data directory (.data)
#   RESOLUTE_RUNTIME             process (default) or docker, auto (docs/deploy-local.md)
#   RESOLUTE_QUICKSTART_TIMEOUT  seconds to wait for the experiment (600)
#   RESOLUTE_EXTRAS              the extras installed into .venv (torch)
#   RESOLUTE_TORCH_INDEX         where torch comes from (scripts/setup.sh)
#   RESOLUTE_PIP_COMPILE         1: pip byte-compiles everything it installs (0 here)
#   PYTHON                       the Python that makes .venv (python3, 3.11 or newer)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${RESOLUTE_DATA_DIR:-$PWD/.data}
PORT=${RESOLUTE_PORT:-8080}
RUNTIME=${RESOLUTE_RUNTIME:-process}
TIMEOUT=${RESOLUTE_QUICKSTART_TIMEOUT:-600}
export DET_MASTER=http://127.0.0.1:$PORT
export RESOLUTE_T0=${RESOLUTE_T0:-$(date +%s)}

step() { printf '[%d:%02d] %s\n' $((($(date +%s) - RESOLUTE_T0) / 60)) $((($(date +%s) - RESOLUTE_T0) % 60)) "$*"; }

if [ "${1:-}" = "stop" ]; then
  if [ -x .venv/bin/det ]; then
    .venv/bin/det deploy local down --data-dir "$DATA"
  fi
  exit 0
fi

step "quick start: set up .venv, start a master and an agent on $DET_MASTER (data in $DATA), run examples/hello"
RESOLUTE_EXTRAS=${RESOLUTE_EXTRAS:-torch} RESOLUTE_PIP_COMPILE=${RESOLUTE_PIP_COMPILE:-0} bash scripts/setup.sh

# setup skipped pip's byte-compiling: what `import torch` loads is compiled now, in the
# background while the deployment starts, so that the trial (whose Unix user may not write
# into .venv) finds it compiled.
.venv/bin/python -c 'import torch' >/dev/null 2>&1 &
# Starts the master and the agent, or says they already run; logs the admin user in.
step "starting the deployment: det deploy local up --runtime $RUNTIME --port $PORT"
.venv/bin/det deploy local up --data-dir "$DATA" --port "$PORT" --runtime "$RUNTIME" --agents 1
export DET_USER=admin DET_PASS
DET_PASS=$(cat "$DATA/admin-password")

step "submitting examples/hello (one trial, 100 batches)"
created=$(.venv/bin/det experiment create examples/hello/const.yaml examples/hello)
echo "$created"
id=$(sed -n 's/^Created experiment \([0-9][0-9]*\).*/\1/p' <<<"$created")
[ -n "$id" ] || { echo "quickstart: could not read the experiment id" >&2; exit 1; }

trial_file=$(mktemp "${TMPDIR:-/tmp}/resolute-quickstart-trial.XXXXXX")
trap 'rm -f "$trial_file"' EXIT
if ! .venv/bin/python scripts/quickstart_wait.py "$id" --timeout "$TIMEOUT" --trial-file "$trial_file"; then
  trial=$(cat "$trial_file")
  if [ -n "$trial" ]; then
    echo "--- last lines of trial $trial's logs:" >&2
    .venv/bin/det trial logs "$trial" --tail 60 >&2 || true
  fi
  echo "--- master and agent logs: $DATA/logs/" >&2
  exit 1
fi

trial=$(cat "$trial_file")
.venv/bin/det experiment describe "$id"
.venv/bin/det trial describe "$trial"
echo
step "Experiment $id COMPLETED. Master: $DET_MASTER (web UI: $DET_MASTER/det/)   user: admin   password: $DATA/admin-password"
echo "Stop the deployment with: bash scripts/quickstart.sh stop"
