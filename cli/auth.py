"""Logging in and the on-disk token cache, compatible with the real client's `auth.json`.

File: `$DET_DEBUG_CONFIG_PATH/auth.json`, else `$XDG_CONFIG_HOME/determined/auth.json`, else
`~/.config/determined/auth.json`; format version 2:
`{"version": 2, "masters": {URL: {"active_user": U, "tokens": {U: TOKEN}}}}`.
Every read-modify-write holds a `filelock` on `auth.json.lock`, the lock the real client takes.

The real determined 0.38.1 client shares this file, and deletes it whole (every master's tokens)
when it fails its validation: only `version` and `masters` at the top, canonical master URLs,
entries with only `active_user` and `tokens`, `active_user` a string *when present* (no user is an
absent key, never null), tokens strings. What we write keeps to that.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import filelock

from cli.client import ApiClient
from cli.errors import UNAUTHENTICATED_HINT, ApiError, CliError, LoginFailed, Unauthenticated

PASSWORD_SALT = "GubPEmmotfiK9TMD6Zdw"
FALLBACK_USER = "determined"
STORE_VERSION = 2
LOCK_TIMEOUT_S = 10.0


def hash_password(password: str) -> str:
    """The client-side password hash: salted SHA-512 hex, or "" for an empty password."""
    if password == "":
        return ""
    return hashlib.sha512((PASSWORD_SALT + password).encode("utf-8")).hexdigest()


def auth_file_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the token cache lives, following the real client's precedence."""
    env = os.environ if env is None else env
    if env.get("DET_DEBUG_CONFIG_PATH"):
        return Path(env["DET_DEBUG_CONFIG_PATH"]) / "auth.json"
    if env.get("XDG_CONFIG_HOME"):
        return Path(env["XDG_CONFIG_HOME"]) / "determined" / "auth.json"
    return Path.home() / ".config" / "determined" / "auth.json"


class TokenStore:
    """Tokens per master URL and user; every operation is one locked read-modify-write."""

    def __init__(self, path: Path, lock_timeout: float = LOCK_TIMEOUT_S) -> None:
        self.path = path
        self._lock = filelock.FileLock(str(path) + ".lock", timeout=lock_timeout)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._lock:
                yield
        except filelock.Timeout:
            raise CliError(f"timed out waiting for the lock on {self.path}") from None
        except OSError as exc:
            raise CliError(f"cannot use the token cache {self.path}: {exc.strerror}") from None

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"version": STORE_VERSION, "masters": {}}
        except ValueError:
            raise CliError(
                f"the token cache {self.path} is corrupt; delete it and log in again"
            ) from None
        if not isinstance(data, dict) or data.get("version") != STORE_VERSION:
            # Older formats held a single master; nothing in them is worth migrating.
            return {"version": STORE_VERSION, "masters": {}}
        data.setdefault("masters", {})
        return data

    def _write(self, data: dict[str, Any]) -> None:
        for entry in data["masters"].values():
            if isinstance(entry, dict) and entry.get("active_user", "") is None:
                del entry["active_user"]  # null is "corrupt" to the real client; absent is not
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".auth.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=2)
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _modify(self, master: str, change: Callable[[dict[str, Any]], None]) -> None:
        with self._locked():
            data = self._read()
            entry = data["masters"].setdefault(master, {"tokens": {}})
            entry.setdefault("tokens", {})
            change(entry)
            self._write(data)

    def _entry(self, master: str) -> dict[str, Any]:
        with self._locked():
            return self._read()["masters"].get(master) or {}

    def get_token(self, master: str, user: str) -> str | None:
        return (self._entry(master).get("tokens") or {}).get(user)

    def cached_users(self, master: str) -> list[str]:
        """The users with a token cached for this master, by name."""
        return sorted(self._entry(master).get("tokens") or {})

    def get_active_user(self, master: str) -> str | None:
        return self._entry(master).get("active_user")

    def set_token(self, master: str, user: str, token: str) -> None:
        self._modify(master, lambda entry: entry["tokens"].__setitem__(user, token))

    def set_active_user(self, master: str, user: str) -> None:
        def change(entry: dict[str, Any]) -> None:
            if user not in entry["tokens"]:
                raise CliError(f"no token is cached for user {user!r} on {master}")
            entry["active_user"] = user

        self._modify(master, change)

    def drop_user(self, master: str, user: str) -> None:
        """Forget the user's token; clear the active user if it was this one (as the real
        client's `clear_active` does: the key goes)."""

        def change(entry: dict[str, Any]) -> None:
            entry["tokens"].pop(user, None)
            if entry.get("active_user") == user:
                del entry["active_user"]

        self._modify(master, change)


@dataclass(frozen=True)
class Credentials:
    """Who we are talking to the master as."""

    username: str
    token: str


def login(client: ApiClient, username: str, password: str) -> Credentials:
    """POST /api/v1/auth/login with the hashed password; no retries, as in the real client."""
    body = {"username": username, "password": hash_password(password), "isHashed": True}
    try:
        reply = client.post("/api/v1/auth/login", body, retry=False)
    except ApiError as exc:
        if exc.status in (400, 401, 403):
            detail = f": {exc.detail}" if exc.detail else ""
            raise LoginFailed(f"login failed for user {username!r}{detail}") from None
        raise
    token = reply.get("token") if isinstance(reply, dict) else None
    if not token:
        raise CliError("the master's login reply has no token")
    user = reply.get("user") or {}
    return Credentials(username=user.get("username") or username, token=token)


def token_is_valid(client: ApiClient, token: str) -> bool:
    """A cached token is good when GET /api/v1/me answers 200 with it."""
    saved = client.token
    client.token = token
    try:
        client.get("/api/v1/me")
        return True
    except Unauthenticated:
        return False
    finally:
        client.token = saved


PasswordPrompt = Callable[[str], str]


def authenticate(
    client: ApiClient,
    store: TokenStore,
    requested_user: str | None,
    prompt_password: PasswordPrompt,
    env: Mapping[str, str] | None = None,
) -> Credentials:
    """Find a usable token, the way the real client's `login_with_cache` does.

    User: `-u`, then DET_USER (+DET_PASS), then the active user, then `determined` with "".
    A cached token is checked with GET /me; otherwise DET_USER_TOKEN or a password login.
    """
    env = os.environ if env is None else env
    master = client.master_url
    env_user, env_pass = env.get("DET_USER"), env.get("DET_PASS")
    password: str | None = None
    fallback = False
    if requested_user:
        user = requested_user
        if env_user == user and env_pass is not None:
            password = env_pass
    elif env_user and env_pass is not None:
        user, password = env_user, env_pass
    else:
        active = store.get_active_user(master)
        if active:
            user = active
        else:
            user, password, fallback = FALLBACK_USER, "", True

    cached = store.get_token(master, user)
    if cached:
        if token_is_valid(client, cached):
            return Credentials(user, cached)
        store.drop_user(master, user)

    if env_user == user and env.get("DET_USER_TOKEN"):
        return Credentials(user, env["DET_USER_TOKEN"])

    if password is None:
        password = prompt_password(user)
    try:
        creds = login(client, user, password)
    except LoginFailed:
        if fallback:
            raise Unauthenticated(401, UNAUTHENTICATED_HINT) from None
        raise
    store.set_token(master, creds.username, creds.token)
    return creds
