#!/usr/bin/env bash
# Start-up script of a Resolute dynamic agent (EC2 user-data, GCE startup-script), rendered for
# one resource pool by provisioners/agent_setup.py. It runs the pool's startup_script, writes the
# agent's files, reads this machine's id from the instance metadata (the EC2 instance id, the GCE
# instance name), installs the agent and starts it, so that it registers under that id.
#
# Every path and address can be changed from the environment, so that tests run this very script
# in a sandbox directory; a cloud VM needs none of them:
#   RESOLUTE_SETUP_ROOT         where agent.yaml, master.crt, the start-up scripts, the agent's
#                               work directory and its log go (default /usr/local/determined)
#   RESOLUTE_METADATA_URL       the instance-metadata server (default: the cloud's own)
#   RESOLUTE_METADATA_TRIES     tries to read this machine's id, 1 s apart (default 60)
#   RESOLUTE_AGENT_INSTALL      shell command that installs the agent (default: the pool's; set
#                               it empty to install nothing)
#   RESOLUTE_AGENT_BIN          the agent program (default det-agent, looked up in
#                               $RESOLUTE_SETUP_ROOT/bin first, then on PATH)
#   RESOLUTE_CONTAINER_RUNTIME  docker or process (default: docker when `docker info` answers)
#   RESOLUTE_AGENT_EXTRA_ARGS   more det-agent flags, split on white space (flags win over the
#                               DET_* variables set here)
#   RESOLUTE_AGENT_FOREGROUND   1: run the agent in this process instead of in the background
# Without det-agent after the install, the agent image runs in Docker (Determined's way).
set -euo pipefail

# --- rendered for the pool; every value is shell-quoted, the texts are base64 ------------------
CLOUD=aws
MASTER_HOST=master.example.com
MASTER_PORT=8443
MASTER_TLS=true
MASTER_CERT_NAME=master.example.com
MASTER_CERT_B64=LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJmYWtlCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K
RESOURCE_POOL=test-pool
SLOT_TYPE=cuda
RECONNECT_ATTEMPTS=5
RECONNECT_BACKOFF=5
STARTUP_SCRIPT_B64=ZWNobyBoZWxsbyBmcm9tIHRoZSBwb29sCg==
AGENT_CONFIG_B64=bG9nOgogIGxldmVsOiBkZWJ1Zwo=
CONTAINER_STARTUP_SCRIPT_B64=ZWNobyBoZWxsbyBmcm9tIGEgdGFzawo=
AGENT_INSTALL_DEFAULT='python3 -m pip install resolute'
AGENT_IMAGE=resolute/agent:0.1.0
AGENT_NETWORK=default
AGENT_DOCKER_RUNTIME=runc
METADATA_URL_DEFAULT=http://169.254.169.254
# -------------------------------------------------------------------------------------------------

ROOT=${RESOLUTE_SETUP_ROOT:-/usr/local/determined}
METADATA_URL=${RESOLUTE_METADATA_URL:-$METADATA_URL_DEFAULT}
METADATA_TRIES=${RESOLUTE_METADATA_TRIES:-60}
AGENT_INSTALL=${RESOLUTE_AGENT_INSTALL-$AGENT_INSTALL_DEFAULT}
AGENT_BIN=${RESOLUTE_AGENT_BIN:-det-agent}
read -r -a EXTRA_ARGS <<<"${RESOLUTE_AGENT_EXTRA_ARGS:-}"

say() { printf 'resolute-agent-setup: %s\n' "$*" >&2; }
decode() { printf '%s' "$1" | base64 -d; }
has_docker() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

mkdir -p "$ROOT"

# 1. The pool's own start-up script comes first; if it fails, no agent is started.
if [ -n "$STARTUP_SCRIPT_B64" ]; then
  decode "$STARTUP_SCRIPT_B64" >"$ROOT/startup_script"
  chmod +x "$ROOT/startup_script"
  say "running the pool's startup_script"
  status=0
  "$ROOT/startup_script" || status=$?
  if [ "$status" -ne 0 ]; then
    say "the pool's startup_script failed (exit $status); the agent is not started"
    exit "$status"
  fi
fi

# 2. The agent's files and settings.
decode "$AGENT_CONFIG_B64" >"$ROOT/agent.yaml"
if [ -n "$CONTAINER_STARTUP_SCRIPT_B64" ]; then
  decode "$CONTAINER_STARTUP_SCRIPT_B64" >"$ROOT/container_startup_script"
  chmod +x "$ROOT/container_startup_script"
fi
export DET_CONFIG_FILE="$ROOT/agent.yaml"
export DET_MASTER_HOST="$MASTER_HOST"
export DET_MASTER_PORT="$MASTER_PORT"
export DET_RESOURCE_POOL="$RESOURCE_POOL"
export DET_SLOT_TYPE="$SLOT_TYPE"
export DET_AGENT_RECONNECT_ATTEMPTS="$RECONNECT_ATTEMPTS"
export DET_AGENT_RECONNECT_BACKOFF="$RECONNECT_BACKOFF"
export DET_WORK_DIR="$ROOT/work"
if [ "$MASTER_TLS" = true ]; then
  export DET_SECURITY_TLS_ENABLED=true
  if [ -n "$MASTER_CERT_B64" ]; then
    decode "$MASTER_CERT_B64" >"$ROOT/master.crt"
    export DET_SECURITY_TLS_MASTER_CERT="$ROOT/master.crt"
  fi
  if [ -n "$MASTER_CERT_NAME" ]; then
    export DET_SECURITY_TLS_MASTER_CERT_NAME="$MASTER_CERT_NAME"
  fi
fi

# 3. This machine's id, from the instance metadata: curl, else Python's urllib.
fetch() { # METHOD URL [HEADER...]: prints the body; fails on any error or HTTP status >= 400
  local method=$1 url=$2 header
  shift 2
  if command -v curl >/dev/null 2>&1; then
    local args=(--fail --silent --show-error --max-time 5 --noproxy '*' -X "$method")
    for header in "$@"; do
      args+=(-H "$header")
    done
    curl "${args[@]}" "$url"
  else
    python3 - "$method" "$url" "$@" <<'PYTHON'
import sys
import urllib.request

method, url, *headers = sys.argv[1:]
request = urllib.request.Request(
    url, method=method, headers=dict(h.split(": ", 1) for h in headers)
)
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(request, timeout=5) as response:
        sys.stdout.write(response.read().decode())
except Exception as exc:
    sys.exit(f"{method} {url}: {exc}")
PYTHON
  fi
}

machine_id() {
  case "$CLOUD" in
    aws)
      local token
      token=$(fetch PUT "$METADATA_URL/latest/api/token" \
        "X-aws-ec2-metadata-token-ttl-seconds: 300") || return 1
      fetch GET "$METADATA_URL/latest/meta-data/instance-id" "X-aws-ec2-metadata-token: $token"
      ;;
    gcp)
      fetch GET "$METADATA_URL/computeMetadata/v1/instance/name" "Metadata-Flavor: Google"
      ;;
  esac
}

AGENT_ID=
for ((try = 1; ; try++)); do
  if AGENT_ID=$(machine_id) && [ -n "$AGENT_ID" ]; then
    break
  fi
  if [ "$try" -ge "$METADATA_TRIES" ]; then
    say "could not read this machine's id from $METADATA_URL ($try tries)"
    exit 1
  fi
  sleep 1
done
export DET_AGENT_ID="$AGENT_ID"
# The agent watches the same server for a spot interruption or preemption notice.
export DET_INTERRUPTION_WATCH="$CLOUD"
export DET_METADATA_URL="$METADATA_URL"

# 4. The agent itself.
if [ -n "$AGENT_INSTALL" ]; then
  say "installing the agent"
  status=0
  bash -c "$AGENT_INSTALL" || status=$?
  if [ "$status" -ne 0 ]; then
    say "installing the agent failed (exit $status)"
    exit "$status"
  fi
fi
PATH="$ROOT/bin:$PATH"

run_agent() {
  local status
  while true; do
    status=0
    "$AGENT_BIN" ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"} || status=$?
    case "$status" in
      # Stopped, or the master stayed away past the reconnect tries (its hook has run).
      0 | 3) return "$status" ;;
    esac
    say "$AGENT_BIN exited with $status; starting it again in 5 s"
    sleep 5
  done
}

if command -v "$AGENT_BIN" >/dev/null 2>&1; then
  RUNTIME=${RESOLUTE_CONTAINER_RUNTIME:-}
  if [ -z "$RUNTIME" ]; then
    if has_docker; then RUNTIME=docker; else RUNTIME=process; fi
  fi
  export DET_CONTAINER_RUNTIME="$RUNTIME"
  say "starting $AGENT_BIN as agent $AGENT_ID in pool $RESOURCE_POOL ($RUNTIME runtime)"
  if [ "${RESOLUTE_AGENT_FOREGROUND:-0}" = 1 ]; then
    run_agent
  else
    (
      trap '' HUP
      run_agent
    ) >>"$ROOT/agent.log" 2>&1 </dev/null &
    say "the agent runs in the background; its log is $ROOT/agent.log"
  fi
elif [ -n "$AGENT_IMAGE" ] && has_docker; then
  export DET_CONTAINER_RUNTIME=docker
  env_args=()
  for name in $(compgen -e); do
    case "$name" in DET_*) env_args+=(-e "$name") ;; esac
  done
  gpu_args=()
  if [ "$SLOT_TYPE" = cuda ]; then
    gpu_args=(--gpus all)
  fi
  say "starting the agent image $AGENT_IMAGE as agent $AGENT_ID in pool $RESOURCE_POOL"
  docker rm -f resolute-agent >/dev/null 2>&1 || true
  # The same paths inside and out: task containers mount run directories by their host path.
  docker run --detach --name resolute-agent --restart always --privileged \
    --network "$AGENT_NETWORK" --runtime "$AGENT_DOCKER_RUNTIME" \
    ${gpu_args[@]+"${gpu_args[@]}"} "${env_args[@]}" \
    --volume /var/run/docker.sock:/var/run/docker.sock --volume "$ROOT:$ROOT" \
    "$AGENT_IMAGE" ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}
else
  say "no $AGENT_BIN after the install, and no agent image with a Docker engine to run it"
  exit 1
fi
