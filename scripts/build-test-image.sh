#!/usr/bin/env bash
# Builds `resolute-test-python:<tag>`, the image the docker runtime's tests (and docker-runtime
# trials on a development machine) run, without any registry (none is reachable here).
#
# What the image is: a ~2 MB root filesystem made of Debian's static busybox (/bin/sh and the
# usual tools), /etc/passwd and /etc/group, empty /tmp, /usr/lib and /usr/lib64, and
# PATH=<venv>/bin:/usr/local/bin:/bin. It holds no Python of its own: the host's interpreter is
# bind-mounted read-only at run time, at the same paths as on the host (the venv's pyvenv.cfg and
# bin/python symlink are absolute): the interpreter prefix, the venv, and /usr/lib + /usr/lib64
# for glibc and the loader. tests/support/docker_image.py returns the image name with exactly
# those mounts; `python3` inside is then the venv's interpreter, torch included.
#
# Usage: scripts/build-test-image.sh [PYTHON]   (default: .venv/bin/python of this checkout)
# The tag names the interpreter (a hash of its venv and prefix), so two checkouts on one machine
# (a CI clone beside a working tree) never overwrite each other's image; `:latest` points at the
# last one built. The image name is the last line printed. Idempotent: an image already built for
# the same interpreter returns at once; otherwise it builds (0.2 s). Needs `busybox-static`.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${1:-.venv/bin/python}
[ -x "$PYTHON" ] || { echo "build-test-image: no interpreter at $PYTHON" >&2; exit 1; }
# sys.prefix is the venv (or the interpreter itself when not in a venv); its bin/ goes on PATH.
VENV=$("$PYTHON" -c 'import sys; print(sys.prefix)')
PYHOME=$("$PYTHON" -c 'import sys; print(sys.base_prefix)')
STAMP="$VENV|$PYHOME"
IMAGE=${RESOLUTE_TEST_IMAGE:-resolute-test-python:$(printf '%s' "$STAMP" | sha256sum | cut -c1-12)}

if [ "$(docker image inspect -f '{{index .Config.Labels "resolute.python"}}' "$IMAGE" 2>/dev/null)" = "$STAMP" ]; then
  echo "build-test-image: up to date for $STAMP"
  echo "$IMAGE"
  exit 0
fi

BUSYBOX=""
for candidate in /bin/busybox /usr/bin/busybox; do
  # A dynamically linked busybox would need the host's libc before the mounts exist.
  if [ -x "$candidate" ] && ! ldd "$candidate" >/dev/null 2>&1; then BUSYBOX=$candidate; break; fi
done
[ -n "$BUSYBOX" ] || { echo "build-test-image: needs a static busybox (apt-get install busybox-static)" >&2; exit 1; }

ROOT=$(mktemp -d)
trap 'rm -rf "$ROOT"' EXIT
mkdir -p "$ROOT"/{bin,etc,tmp,proc,sys,dev,root,usr/lib,usr/lib64,usr/local/bin} "$ROOT$VENV" "$ROOT$PYHOME"
chmod 1777 "$ROOT/tmp"
cp "$BUSYBOX" "$ROOT/bin/busybox"
for applet in $("$ROOT/bin/busybox" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$ROOT/bin/$applet"
done
ln -s usr/lib "$ROOT/lib"
ln -s usr/lib64 "$ROOT/lib64"
echo 'root:x:0:0:root:/root:/bin/sh' >"$ROOT/etc/passwd"
echo 'root:x:0:' >"$ROOT/etc/group"

tar -C "$ROOT" -c . | docker import \
  -c "ENV PATH=$VENV/bin:/usr/local/bin:/bin" \
  -c "LABEL resolute.python=\"$STAMP\"" \
  -c 'LABEL resolute.purpose="busybox with the host Python mounted read-only at run time"' \
  - "$IMAGE" >/dev/null
docker tag "$IMAGE" resolute-test-python:latest
echo "build-test-image: built for $STAMP"
echo "$IMAGE"
