"""Global options and the per-invocation connection to the master."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httpx
import typer

from cli.auth import Credentials, TokenStore, auth_file_path, authenticate
from cli.client import DEFAULT_MASTER, ApiClient, canonicalize_master_url
from cli.errors import CliError
from cli.tls import master_trust


@dataclass
class GlobalOptions:
    """What `det -m MASTER -u USER` said, before any network call.

    `transport` and `sleep` are seams for tests (an `httpx.MockTransport` standing in for the
    master, a sleep that returns at once), passed as the context object:
    `runner.invoke(app, args, obj=GlobalOptions(...))`.
    """

    master: str | None = None
    user: str | None = None
    transport: httpx.BaseTransport | None = None
    sleep: Callable[[float], None] = time.sleep


def resolve_master(option: str | None, env: Mapping[str, str] | None = None) -> str:
    """`-m`, else DET_MASTER, else DET_MASTER_ADDR, else localhost:8080; canonicalised."""
    env = os.environ if env is None else env
    raw = option or env.get("DET_MASTER") or env.get("DET_MASTER_ADDR") or DEFAULT_MASTER
    return canonicalize_master_url(raw)


def global_options(ctx: typer.Context) -> GlobalOptions:
    obj = ctx.find_root().obj
    return obj if isinstance(obj, GlobalOptions) else GlobalOptions()


def token_store() -> TokenStore:
    return TokenStore(auth_file_path())


def read_secret(prompt: str) -> str:
    """Hidden prompt on a terminal; one line of stdin otherwise (scripts, CI)."""
    if sys.stdin.isatty():
        return typer.prompt(prompt, hide_input=True, default="", show_default=False)
    sys.stderr.write(f"{prompt}: ")
    sys.stderr.flush()
    line = sys.stdin.readline()
    sys.stderr.write("\n")
    if not line:
        raise CliError(f"{prompt}: no input (stdin is closed); set DET_USER and DET_PASS instead")
    return line.rstrip("\r\n")


def prompt_password(user: str) -> str:
    return read_secret(f"Password for user '{user}'")


def open_client(ctx: typer.Context) -> ApiClient:
    """An unauthenticated client for the selected master, closed with the command."""
    options = global_options(ctx)
    client = ApiClient(
        resolve_master(options.master),
        transport=options.transport,
        sleep=options.sleep,
        trust=master_trust(),
    )
    ctx.call_on_close(client.close)
    return client


@dataclass
class Session:
    """An authenticated client plus the user it acts as."""

    client: ApiClient
    username: str


def open_session(ctx: typer.Context) -> Session:
    """Connect and authenticate the way the real client's `login_with_cache` does."""
    client = open_client(ctx)
    creds: Credentials = authenticate(
        client, token_store(), global_options(ctx).user, prompt_password
    )
    client.token = creds.token
    return Session(client=client, username=creds.username)
