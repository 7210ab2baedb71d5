#!/usr/bin/env bash
# The main job on the embedded default: set up, start a master (SQLite + shared_fs under
# .data/), submit the example experiment with our `det`, and list and describe it.
# The master keeps running afterwards (its log: .data/master.log); `bash scripts/quickstart.sh stop`
# stops it. Later issues extend this to agents training the model to completion.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${RESOLUTE_DATA_DIR:-$PWD/.data}
PORT=${RESOLUTE_PORT:-8080}
export DET_MASTER=http://127.0.0.1:$PORT
mkdir -p "$DATA"

if [ "${1:-}" = "stop" ]; then
  [ -f "$DATA/master.pid" ] && kill "$(cat "$DATA/master.pid")" 2>/dev/null && echo "master stopped"
  rm -f "$DATA/master.pid"
  exit 0
fi

RESOLUTE_EXTRAS=${RESOLUTE_EXTRAS:-dev} bash scripts/setup.sh

# A local password for the built-in users, created once and readable only by you.
if [ ! -s "$DATA/admin-password" ]; then
  (umask 077 && .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(18))' \
    > "$DATA/admin-password")
fi
export DET_USER=admin DET_PASS
DET_PASS=$(cat "$DATA/admin-password")

if ! curl -fsS "$DET_MASTER/info" >/dev/null 2>&1; then
  echo "starting the master on $DET_MASTER (data in $DATA)"
  DET_SECURITY_INITIAL_USER_PASSWORD="$DET_PASS" nohup .venv/bin/det-master \
    --host 127.0.0.1 --port "$PORT" --data-dir "$DATA" > "$DATA/master.log" 2>&1 &
  echo $! > "$DATA/master.pid"
  for _ in $(seq 1 60); do curl -fsS "$DET_MASTER/info" >/dev/null 2>&1 && break; sleep 0.5; done
fi

.venv/bin/det master info
.venv/bin/det experiment create examples/hello/const.yaml examples/hello
.venv/bin/det experiment list
id=$(.venv/bin/det experiment list --json | .venv/bin/python -c \
  'import json,sys; print(max(e["id"] for e in json.load(sys.stdin)["experiments"]))')
.venv/bin/det experiment describe "$id"
echo
echo "Master: $DET_MASTER   user: admin   password: $DATA/admin-password"
echo "Stop it with: bash scripts/quickstart.sh stop"
