#!/usr/bin/env bash
# The main job on the embedded default: set up, `det deploy local up` (a master with SQLite and
# shared_fs checkpoints under .data/, plus one agent whose tasks run in the task venv
# .data/task-venv, never in .venv), submit examples/hello, wait until the experiment COMPLETES,
# and describe it and its trial with their metrics.
# The deployment keeps running afterwards (logs: .data/logs/); `bash scripts/quickstart.sh stop`
# stops it. Settings: RESOLUTE_DATA_DIR (.data), RESOLUTE_PORT (8080), RESOLUTE_RUNTIME
# (process; docker needs an image with Python and torch, see docs/deploy-local.md),
# RESOLUTE_QUICKSTART_TIMEOUT (seconds to wait for the experiment, 600).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${RESOLUTE_DATA_DIR:-$PWD/.data}
PORT=${RESOLUTE_PORT:-8080}
RUNTIME=${RESOLUTE_RUNTIME:-process}
TIMEOUT=${RESOLUTE_QUICKSTART_TIMEOUT:-600}
export DET_MASTER=http://127.0.0.1:$PORT

if [ "${1:-}" = "stop" ]; then
  if [ -x .venv/bin/det ]; then
    .venv/bin/det deploy local down --data-dir "$DATA"
  fi
  exit 0
fi

RESOLUTE_EXTRAS=${RESOLUTE_EXTRAS:-dev,torch} bash scripts/setup.sh

# Starts the master and the agent, or says they already run; logs the admin user in.
.venv/bin/det deploy local up --data-dir "$DATA" --port "$PORT" --runtime "$RUNTIME" --agents 1
export DET_USER=admin DET_PASS
DET_PASS=$(cat "$DATA/admin-password")

json_field() { .venv/bin/python -c "import json, sys; print($1)"; }

.venv/bin/det master info
created=$(.venv/bin/det experiment create examples/hello/const.yaml examples/hello)
echo "$created"
id=$(sed -n 's/^Created experiment \([0-9][0-9]*\).*/\1/p' <<<"$created")
[ -n "$id" ] || { echo "quickstart: could not read the experiment id" >&2; exit 1; }
trial=""
state=""
deadline=$((SECONDS + TIMEOUT))
echo "waiting for experiment $id to complete (up to $TIMEOUT s) …"
while [ "$SECONDS" -lt "$deadline" ]; do
  state=$(.venv/bin/det experiment describe "$id" --json |
    json_field 'json.load(sys.stdin)["experiment"]["state"]')
  [ -n "$trial" ] || trial=$(.venv/bin/det experiment list-trials "$id" --json |
    json_field '(json.load(sys.stdin)["trials"] or [{"id": ""}])[0]["id"]')
  case "$state" in
    STATE_COMPLETED | STATE_CANCELED | STATE_ERROR | STATE_DELETED) break ;;
  esac
  sleep 2
done

if [ "$state" != STATE_COMPLETED ]; then
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "quickstart: experiment $id did not complete within $TIMEOUT s (state ${state#STATE_})" >&2
  else
    echo "quickstart: experiment $id ended in state ${state#STATE_}, not COMPLETED" >&2
  fi
  if [ -n "$trial" ]; then
    echo "--- last lines of trial $trial's logs:" >&2
    .venv/bin/det trial logs "$trial" --tail 60 >&2 || true
  fi
  echo "--- master and agent logs: $DATA/logs/" >&2
  exit 1
fi

.venv/bin/det experiment describe "$id"
.venv/bin/det trial describe "$trial"
echo
echo "Experiment $id COMPLETED. Master: $DET_MASTER   user: admin   password: $DATA/admin-password"
echo "Stop the deployment with: bash scripts/quickstart.sh stop"
