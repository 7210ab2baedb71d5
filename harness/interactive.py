"""The task side of notebooks, TensorBoards and shells: `python3 -m harness.interactive KIND`.

Starts the service on a free port (JupyterLab under the proxy's base URL, without a
token: the master's proxy authenticates; TensorBoard over the trials' event files; sshd with
the shell's key), waits until it answers, reports its address (the agent's advertised one;
see `reachable` for what keeps a direct visitor out) and then readiness to the master
(POST /api/v1/allocations/{id}/proxy_address and /ready), and exits with the service's exit
code, forwarding SIGTERM and SIGINT. Settings come from RESOLUTE_INTERACTIVE (JSON).
Standard library only, like the rest of the harness.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import shell_accounts

READY_TIMEOUT_S = 300.0


LOOPBACK = "127.0.0.1"
# Set by the agent from its advertise_address: where the master's proxy reaches this machine.
ADDRESS_ENV = "RESOLUTE_AGENT_ADDRESS"


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def given_port(host: str, ports: list[int]) -> int:
    """The first of the ports the master gave this task that is free on `host`: the master's
    proxy connects to no other (a free port of our choosing would be refused). Without any
    (an older master), a free port."""
    for port in ports:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    if ports:
        raise RuntimeError(f"none of the ports given to this task is free on {host}: {ports}")
    return free_port(host)


def _master_call(path: str, body: dict[str, Any]) -> None:
    master = os.environ["DET_MASTER"].rstrip("/")
    request = urllib.request.Request(
        f"{master}{path}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Grpc-Metadata-x-allocation-token": f"Bearer {os.environ['DET_SESSION_TOKEN']}",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        reply.read()


def notebook_argv(port: int, base_url: str, workdir: str) -> list[str]:
    return [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        f"--ServerApp.base_url={base_url}", "--IdentityProvider.token=",
        "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
        "--ServerApp.allow_origin=*", "--ServerApp.allow_remote_access=True",
        f"--ServerApp.root_dir={workdir}", "--ServerApp.open_browser=False",
        # Tasks run as root where the agent runs every task as root (docker, --single-user).
        *(["--allow-root"] if os.geteuid() == 0 else []),
    ]  # fmt: skip


MIRROR_INTERVAL_S = 5.0


def cloud_mirror(storage: dict[str, Any], sync: str, local: Path) -> Callable[[], None]:
    """A function that copies the trial's event files from s3 or gcs into `local` (new files,
    and files that grew: event files are appended to)."""
    from harness.core._storage import storage_from_config

    cloud: Any = storage_from_config(storage)
    base = "/".join(p for p in (cloud.prefix, sync) if p) + "/"

    def mirror() -> None:
        for key, size in cloud._list(base):
            rel = key[len(base) :]
            parts = rel.split("/")
            if not rel or rel.endswith("/") or any(p in ("", ".", "..") for p in parts):
                continue  # directory markers, and names that would climb out of `local`
            target = local.joinpath(*parts)
            if target.exists() and target.stat().st_size == size:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            part = target.with_name(target.name + ".part")
            cloud._get(key, part)
            os.replace(part, target)

    return mirror


def tensorboard_logdirs(
    settings: dict[str, Any], cluster_id: str, cache: Path
) -> tuple[list[tuple[str, Path]], list[Callable[[], None]]]:
    """(name, folder) per trial, and the mirrors that fill the folders of cloud storages."""
    from harness.core._tensorboard import storage_root, sync_path

    out, mirrors = [], []
    for source in settings.get("sources") or []:
        storage = source.get("checkpoint_storage") or {}
        name = f"trial_{source['trial_id']}"
        sync = sync_path(cluster_id, source["experiment_id"], source["trial_id"])
        root = storage_root(storage)
        if root is not None:
            path = root / sync
        elif storage.get("type") in ("s3", "gcs"):
            path = cache / name
            path.mkdir(parents=True, exist_ok=True)
            mirrors.append(cloud_mirror(storage, str(sync), path))
        else:
            print(f"trial {source['trial_id']}: checkpoint storage {storage.get('type')!r} "
                  "holds no event files this task can read", flush=True)  # fmt: skip
            continue
        print(f"trial {source['trial_id']}: event files from {path}", flush=True)
        out.append((name, path))
    return out, mirrors


def keep_mirroring(mirrors: list[Callable[[], None]]) -> None:
    def loop() -> None:
        while True:
            for mirror in mirrors:
                try:
                    mirror()
                except Exception as exc:  # the next round tries again
                    print(f"copying event files from checkpoint storage: {exc}", flush=True)
            time.sleep(MIRROR_INTERVAL_S)

    if mirrors:
        threading.Thread(target=loop, daemon=True, name="tensorboard-mirror").start()


def tensorboard_argv(port: int, base_url: str, settings: dict[str, Any]) -> list[str]:
    # One folder of links named trial_<id>: TensorBoard then names each run by its trial
    # (a --logdir_spec would call them "trial_<id>/.").
    logdir = Path(tempfile.mkdtemp(prefix="resolute-tensorboard-"))
    cache = Path(tempfile.mkdtemp(prefix="resolute-tensorboard-cloud-"))
    cluster_id = os.environ.get("DET_CLUSTER_ID", "")
    dirs, mirrors = tensorboard_logdirs(settings, cluster_id, cache)
    for mirror in mirrors:  # the first copy before TensorBoard starts: its first load sees it
        try:
            mirror()
        except Exception as exc:
            print(f"copying event files from checkpoint storage: {exc}", flush=True)
    keep_mirroring(mirrors)
    for name, path in dirs:
        (logdir / name).symlink_to(path, target_is_directory=True)
    return [
        sys.executable, "-m", "tensorboard.main", "--host", "127.0.0.1", "--port", str(port),
        "--path_prefix", base_url.rstrip("/"), "--logdir", str(logdir), "--reload_interval", "5",
        *settings.get("tensorboard_args", []),
    ]  # fmt: skip


def shell_argv(port: int, settings: dict[str, Any], host: str = LOOPBACK) -> list[str]:
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    folder = Path(tempfile.mkdtemp(prefix="resolute-sshd-"))
    # ssh-keygen and sshd both look the user up: name it first (see login_as)
    login_as(settings.get("user") or "", folder)
    host_key = folder / "host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key)], check=True)
    keys = folder / "authorized_keys"
    keys.write_text(settings["public_key"] + "\n")
    keys.chmod(0o600)
    config = folder / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress {host}\nHostKey {host_key}\n"
        f"AuthorizedKeysFile {keys}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        f"PubkeyAuthentication yes\nStrictModes no\nUsePAM no\nPidFile {folder}/sshd.pid\n"
        "PermitRootLogin prohibit-password\nPrintMotd no\nAcceptEnv *\n" + _set_env(os.environ)
    )
    if os.geteuid() == 0:  # a root sshd's privilege separation child is confined there
        Path(shell_accounts.PRIVSEP_DIR).mkdir(mode=0o755, exist_ok=True)
    return [sshd, "-D", "-e", "-f", str(config)]


def login_as(name: str, folder: Path) -> None:
    """Make sshd find every account it looks up (harness.shell_accounts): the login the master
    handed the client, naming this process's uid, and, for a root sshd, its privilege
    separation user, through an nss_wrapper passwd file where the machine's own does not
    answer. Says why the shell cannot work where no wrapper is installed."""
    accounts = shell_accounts.accounts_for_sshd(name, folder)
    if accounts.passwd is None:
        return
    library = shell_accounts.wrapper_library()
    if library is None:
        print(shell_accounts.why_no_wrapper(accounts, name, os.getuid()), flush=True)
        return
    os.environ.update(shell_accounts.install(accounts, folder, library))


# What a session keeps its own (sshd sets them for the login, or they are a shell's state).
SESSION_OWN = frozenset(
    {"HOME", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD", "SHLVL", "_", "MAIL", "TERM"}
)


def _set_env(env: dict[str, str] | os._Environ[str]) -> str:
    """The task's environment for every ssh session (`SetEnv`), as Determined's shell
    entrypoint hands its sessions the container's: what the image, the config and a sourced
    startup-hook.sh set reaches the user's shell. Quoted for sshd's config parser; a name that
    is not a shell name, or a value with a line break, cannot be written there and is left out.
    """
    pairs = []
    for key, value in sorted(env.items()):
        if key in SESSION_OWN or key.startswith("SSH_") or not _shell_name(key):
            continue
        if "\n" in value or "\r" in value:
            continue
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        pairs.append(f'"{key}={escaped}"')
    return f"SetEnv {' '.join(pairs)}\n" if pairs else ""


def _shell_name(key: str) -> bool:
    return bool(key) and key.isascii() and not key[0].isdigit() and key.replace("_", "a").isalnum()


def _answers(port: int, path: str, tcp_only: bool, host: str = LOOPBACK) -> bool:
    try:
        if tcp_only:
            with socket.create_connection((host, port), timeout=1) as s:
                return bool(s.recv(4))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as reply:
            return reply.status < 500
    except OSError:
        return False


def reachable(kind: str, host: str, port: int, ports: list[int] | None = None) -> dict[str, str]:
    """The address the master's proxy reaches the service on. sshd listens there itself (only
    the holder of the shell's key logs in); JupyterLab and TensorBoard have no login of their
    own here, so they stay on loopback behind a gate that admits only the proxy's secret."""
    if kind == "SHELL":
        return {"proxyAddress": f"{host}:{port}"}
    from harness.interactive_gate import open_gate

    secret = secrets.token_urlsafe(32)
    for candidate in ports or [0]:
        try:
            _, gate_port = open_gate(host, port, secret, candidate)
            break
        except OSError:
            continue
    else:
        raise RuntimeError(f"none of the ports given to this task is free on {host}: {ports}")
    return {"proxyAddress": f"{host}:{gate_port}", "proxySecret": secret}


def main(argv: list[str]) -> int:
    kind = (argv[0] if argv else "").upper()
    settings = json.loads(os.environ.get("RESOLUTE_INTERACTIVE") or "{}")
    base_url = settings.get("base_url") or f"/proxy/{os.environ.get('DET_TASK_ID', '')}/"
    host = os.environ.get(ADDRESS_ENV) or LOOPBACK
    given = [int(p) for p in settings.get("ports") or []]
    # sshd listens on a given port itself; JupyterLab and TensorBoard stay on a free loopback
    # port behind the gate, which takes the given port.
    port = given_port(host, given) if kind == "SHELL" else free_port(LOOPBACK)
    if kind == "NOTEBOOK":
        command, probe = notebook_argv(port, base_url, os.getcwd()), f"{base_url}api/status"
    elif kind == "TENSORBOARD":
        command, probe = tensorboard_argv(port, base_url, settings), base_url
    elif kind == "SHELL":
        command, probe = shell_argv(port, settings, host), ""
    else:
        print(f"harness.interactive: unknown kind {kind!r}", file=sys.stderr)
        return 2
    child = subprocess.Popen(command)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: child.send_signal(signum))
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not _answers(port, probe, kind == "SHELL", host if kind == "SHELL" else LOOPBACK):
        if child.poll() is not None:
            print(f"{kind.lower()} exited before it answered", file=sys.stderr, flush=True)
            return child.returncode or 1
        if time.monotonic() > deadline:
            print(f"{kind.lower()} did not answer within {READY_TIMEOUT_S:.0f}s", flush=True)
            child.kill()
            return 1
        time.sleep(0.1)
    allocation = os.environ["DET_ALLOCATION_ID"]
    quoted = urllib.request.quote(allocation, safe="")
    address = reachable(kind, host, port, given)
    if address["proxyAddress"] != f"{host}:{port}":
        gate = address["proxyAddress"]
        print(f"{kind.lower()} serves on {LOOPBACK}:{port}, behind the gate at {gate} "
              "that admits only the master's proxy", flush=True)  # fmt: skip
    _master_call(f"/api/v1/allocations/{quoted}/proxy_address", address)
    _master_call(f"/api/v1/allocations/{quoted}/ready", {})
    print(f"{kind.lower()} is ready at {base_url} (through the master's proxy)", flush=True)
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
