"""The accounts a shell's sshd must be able to look up, on any runtime.

sshd looks up two users: the one the client logs in as (the name the master handed it, whose
uid is this process's), and, when it runs as root, its privilege separation user (`sshd`, whose
pre-authentication child it becomes; OpenSSH has had no way to turn privilege separation off
since 7.5, and refuses to start without that user: "Privilege separation user sshd does not
exist"). On the process runtime neither need be in the machine's passwd file: a task user's uid
has no entry, and a task running as root under another login name needs an nss_wrapper passwd
file, which hides the system's entries, the privilege separation user's included. So the
wrapper's file names every account sshd asks for: the uid's real entry, the login, and the
privilege separation user (the machine's own entry, or one mapped to `nobody` where the machine
has none, as a minimal image may not).

Standard library only, like the rest of the harness; pure apart from `accounts_for_sshd`'s
lookups.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

PRIVSEP_USER = "sshd"
# What OpenSSH's privilege separation child runs as where the machine has no `sshd` user: an
# unprivileged uid and gid (Debian's nobody/nogroup), confined to an empty root-owned directory.
NOBODY_ID = 65534
PRIVSEP_DIR = "/run/sshd"
NSS_WRAPPER = (
    "/usr/lib/x86_64-linux-gnu/libnss_wrapper.so",
    "/usr/lib/aarch64-linux-gnu/libnss_wrapper.so",
    "/usr/lib/libnss_wrapper.so",
)


@dataclass(frozen=True)
class Accounts:
    """What sshd needs looked up, decided: `passwd`/`group` lines for an nss_wrapper (None: the
    machine's own files already answer every lookup), and what to tell the user if the
    shell cannot work here."""

    passwd: tuple[str, ...] | None
    group: tuple[str, ...] = ()
    problem: str = ""


def plan_accounts(
    name: str,
    uid: int,
    gid: int,
    euid: int,
    real: Sequence[object] | None,
    privsep: Sequence[object] | None,
    home: str,
) -> Accounts:
    """`real`: this uid's passwd entry (None: it has none); `privsep`: the machine's `sshd`
    entry (None: none). Pure: the lookups are the caller's."""
    named = real is not None and (not name or real[0] == name)
    # Only a root sshd switches to its privilege separation user.
    needs_privsep = euid == 0
    if named and (privsep is not None or not needs_privsep):
        return Accounts(None)
    lines: list[str] = []
    if real is not None:
        lines.append(":".join(str(f) for f in real))
        login_home, shell = str(real[5]), str(real[6] or "/bin/sh")
    else:
        login_home, shell = home, "/bin/sh"
    groups = []
    if not named:
        name = name or f"task-{uid}"
        lines.append(f"{name}:x:{uid}:{gid}:{name}:{login_home}:{shell}")
        groups.append(f"{name}:x:{gid}:")
    if needs_privsep:
        if privsep is not None:
            lines.append(":".join(str(f) for f in privsep))
        else:
            lines.append(
                f"{PRIVSEP_USER}:x:{NOBODY_ID}:{NOBODY_ID}:sshd privilege separation:"
                f"{PRIVSEP_DIR}:/usr/sbin/nologin"
            )
            if gid != NOBODY_ID:
                groups.append(f"nogroup:x:{NOBODY_ID}:")
    return Accounts(tuple(lines), tuple(groups))


def accounts_for_sshd(name: str, folder: Path) -> Accounts:
    """Look the accounts up and plan them; explain what is missing where nothing can help."""
    uid = os.getuid()
    try:
        real: Sequence[object] | None = tuple(pwd.getpwuid(uid))
    except KeyError:
        real = None
    try:
        privsep: Sequence[object] | None = tuple(pwd.getpwnam(PRIVSEP_USER))
    except KeyError:
        privsep = None
    home = os.environ.get("HOME") or str(folder)
    return plan_accounts(name, uid, os.getgid(), os.geteuid(), real, privsep, home)


def wrapper_library() -> str | None:
    return next((p for p in NSS_WRAPPER if os.path.exists(p)), None)


def why_no_wrapper(accounts: Accounts, name: str, uid: int) -> str:
    """What the user is told when the accounts need an nss_wrapper and the machine has none."""
    missing = []
    if any(line.startswith(f"{PRIVSEP_USER}:") for line in accounts.passwd or ()) and (
        os.geteuid() == 0
    ):
        missing.append(
            f"sshd runs as root here and needs its privilege separation user {PRIVSEP_USER!r}"
        )
    missing.append(f"ssh logs in as {name!r}, which must name uid {uid}")
    return (
        "shell: " + "; ".join(missing) + ". This machine has no libnss_wrapper to provide "
        "them (Debian: apt install libnss-wrapper; or create the users)"
    )


def install(accounts: Accounts, folder: Path, library: str) -> dict[str, str]:
    """Write the wrapper's files; the environment that makes sshd (and its sessions) use them."""
    assert accounts.passwd is not None
    passwd, group = folder / "passwd", folder / "group"
    passwd.write_text("\n".join(accounts.passwd) + "\n")
    group.write_text("".join(line + "\n" for line in accounts.group))
    return {
        "LD_PRELOAD": library,
        "NSS_WRAPPER_PASSWD": str(passwd),
        "NSS_WRAPPER_GROUP": str(group),
    }
