"""A shell's sshd finds every account it looks up (issue 39, finding 9: `det shell start` on the
process runtime failed with "Privilege separation user sshd does not exist" when the task ran
as root under another login name: the nss_wrapper passwd file that names the login hid the
machine's `sshd` user)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.shell_accounts import NOBODY_ID, Accounts, plan_accounts, wrapper_library

REPO = Path(__file__).resolve().parents[2]
ROOT = ("root", "x", 0, 0, "root", "/root", "/bin/bash")
SSHD = ("sshd", "x", 109, 65534, "", "/run/sshd", "/usr/sbin/nologin")
ALICE = ("alice", "x", 1000, 1000, "Alice", "/home/alice", "/bin/zsh")
SYNTHETIC = f"sshd:x:{NOBODY_ID}:{NOBODY_ID}:sshd privilege separation:/run/sshd:/usr/sbin/nologin"


@pytest.mark.parametrize(
    ("name", "uid", "euid", "real", "privsep", "passwd", "group"),
    [
        # the machine's files answer everything: no wrapper
        ("root", 0, 0, ROOT, SSHD, None, ()),
        ("alice", 1000, 1000, ALICE, None, None, ()),  # a non-root sshd needs no sshd user
        ("", 1000, 1000, ALICE, SSHD, None, ()),
        # root under another login: the wrapper must name sshd too (the bug)
        ("admin", 0, 0, ROOT, SSHD, ("root:x:0:0:root:/root:/bin/bash",
         "admin:x:0:0:admin:/root:/bin/bash", "sshd:x:109:65534::/run/sshd:/usr/sbin/nologin"),
         ("admin:x:0:",)),
        # root on a machine without an sshd user (a minimal image): one mapped to nobody
        ("root", 0, 0, ROOT, None, ("root:x:0:0:root:/root:/bin/bash", SYNTHETIC),
         (f"nogroup:x:{NOBODY_ID}:",)),
        # a task user without a passwd entry (the process runtime's task users), not root
        ("bob", 20001, 20001, None, SSHD, ("bob:x:20001:20001:bob:/tmp/home:/bin/sh",),
         ("bob:x:20001:",)),
        ("", 20001, 20001, None, None, ("task-20001:x:20001:20001:task-20001:/tmp/home:/bin/sh",),
         ("task-20001:x:20001:",)),
    ],
)  # fmt: skip
def test_plan(
    name: str,
    uid: int,
    euid: int,
    real: tuple[object, ...] | None,
    privsep: tuple[object, ...] | None,
    passwd: tuple[str, ...] | None,
    group: tuple[str, ...],
) -> None:
    gid = uid
    got = plan_accounts(name, uid, gid, euid, real, privsep, "/tmp/home")
    assert got == Accounts(passwd, group)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _needs(root: bool = True) -> None:
    if shutil.which("ssh") is None or not (shutil.which("sshd") or Path("/usr/sbin/sshd").exists()):
        pytest.skip("openssh-server and openssh-client are needed")
    if wrapper_library() is None:
        pytest.skip("libnss_wrapper is needed (Debian: libnss-wrapper)")
    if root and os.geteuid() != 0:
        pytest.skip("runs sshd as root, as a single-user agent running as root does")


# The shell's start as harness.interactive makes it: its accounts, its sshd_config, then sshd.
START = """
import json, os, sys
from harness import shell_accounts
from harness.interactive import shell_argv
settings = json.loads(sys.argv[1])
if settings.pop("no_sshd_user", False):  # the machine had no `sshd` user
    real = shell_accounts.plan_accounts
    shell_accounts.accounts_for_sshd = lambda name, folder: real(
        name, os.getuid(), os.getgid(), os.geteuid(), tuple(__import__("pwd").getpwuid(0)),
        None, "/root")
argv = shell_argv(int(sys.argv[2]), settings)
os.execve(argv[0], argv, os.environ)
"""


def _login(
    tmp_path: Path,
    user: str,
    no_sshd_user: bool = False,
    as_uid: int = 0,
    command: str = "echo logged in as $(id -u)",
    env: dict[str, str] | None = None,
) -> str:
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    port = _free_port()
    settings = {"user": user, "public_key": (tmp_path / "key.pub").read_text().strip()}
    if no_sshd_user:
        settings["no_sshd_user"] = True
    import json

    sshd = subprocess.Popen(
        [sys.executable, "-c", START, json.dumps(settings), str(port)],
        env={
            **os.environ,
            **(env or {}),
            **{"PYTHONPATH": str(REPO), "DET_TASK_ID": "t", "HOME": str(tmp_path)},
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        **({"user": as_uid, "group": as_uid, "extra_groups": []} if as_uid else {}),
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if sshd.poll() is not None:
                out = sshd.communicate()[0].decode(errors="replace")
                raise AssertionError(f"sshd exited {sshd.returncode}: {out}")
            assert time.monotonic() < deadline, "sshd never listened"
            time.sleep(0.1)
        ran = subprocess.run(
            [
                *("ssh", "-i", str(key), "-p", str(port), "-o", "BatchMode=yes"),
                *("-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"),
                f"{user}@127.0.0.1", command,
            ],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        return ran.stdout
    finally:
        sshd.terminate()
        sshd.communicate(timeout=10)


def test_root_sshd_under_another_login_starts(tmp_path: Path) -> None:
    _needs()
    assert _login(tmp_path, "alice-task") == "logged in as 0\n"


def test_root_sshd_on_a_machine_without_an_sshd_user_starts(tmp_path: Path) -> None:
    _needs()
    assert _login(tmp_path, "root", no_sshd_user=True) == "logged in as 0\n"


def test_an_unprivileged_sshd_needs_no_sshd_user(tmp_path: Path) -> None:
    """A task user of the process runtime (a uid without a passwd entry): sshd runs as it, so
    it never looks its privilege separation user up, and the login names the uid."""
    _needs()  # root, to start the task as another uid
    tmp_path.chmod(0o755)
    assert _login(tmp_path, "bob", as_uid=20123) == "logged in as 20123\n"


TRICKY = 'a "quoted" \\back\\slash $dollar `tick` two  spaces'


def test_the_tasks_environment_reaches_the_session(tmp_path: Path) -> None:
    """As Determined's shell entrypoint does: what the task's environment has (its config's
    variables, a sourced startup-hook.sh's exports) is the session's, values unchanged."""
    _needs()
    got = _login(
        tmp_path,
        "alice-task",
        command='printf "%s|%s\\n" "$HOOKED" "$TRICKY"',
        env={"HOOKED": "from the hook", "TRICKY": TRICKY},
    )
    assert got == f"from the hook|{TRICKY}\n"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ""),
        ({"A": "1"}, 'SetEnv "A=1"\n'),
        ({"B": 'say "hi" \\o/', "A": "x y"}, 'SetEnv "A=x y" "B=say \\"hi\\" \\\\o/"\n'),
        # the session's own, and what sshd's config cannot hold, are left out
        ({"HOME": "/x", "SSH_AUTH_SOCK": "s", "SHLVL": "2", "TERM": "xterm"}, ""),
        ({"MULTI": "a\nb", "1X": "1", "A-B": "1", "É": "1", "OK_1": ""}, 'SetEnv "OK_1="\n'),
    ],
)
def test_set_env(env: dict[str, str], expected: str) -> None:
    from harness.interactive import _set_env

    assert _set_env(env) == expected
