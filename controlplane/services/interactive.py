"""Notebooks, TensorBoards and shells: launched as commands of their own task types.

Each runs the harness's interactive launcher (`python3 -m harness.interactive KIND`), which
starts the service (JupyterLab, TensorBoard, sshd) on a free port, reports that address and
then readiness to the master (POST /api/v1/allocations/{id}/proxy_address and /ready), and is
reached only through the master's proxy at `/proxy/{task id}/`. What the launcher needs is kept
in the stored config under `resolute_interactive` (the task gets it as an environment variable).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from controlplane.api.schemas.expconf import ExperimentConfigError, load_yaml_mapping
from controlplane.db.models import Experiment, Trial, User
from controlplane.domain.errors import InvalidArgument, NotFound
from controlplane.domain.interactive import (
    DEFAULT_TENSORBOARD_TIMEOUT_S,
    Kind,
    parse_idle_type,
    parse_timeout,
)
from controlplane.domain.task_user import DefaultTaskUser, TaskUserError
from controlplane.services import commands, task_users
from controlplane.services.commands import CommandView, NewCommand

SETTINGS_KEY = "resolute_interactive"
MAX_TENSORBOARD_SOURCES = 100
# Zero slots unless asked: interactive work goes to the aux pool like other zero-slot tasks.
DEFAULT_SLOTS = 0


@dataclass(frozen=True)
class InteractiveDefaults:
    """Master-wide settings (Determined's `notebook_timeout`, `tensorboard_timeout`)."""

    notebook_timeout_s: float | None = None
    tensorboard_timeout_s: float | None = DEFAULT_TENSORBOARD_TIMEOUT_S


@dataclass(frozen=True)
class NewInteractive:
    kind: Kind
    config: dict[str, Any] | str
    files: list[dict[str, Any]]
    template: str | None = None
    workspace_id: int | None = None
    experiment_ids: tuple[int, ...] = ()
    trial_ids: tuple[int, ...] = ()


def ssh_key_pair() -> tuple[str, str]:
    """A fresh Ed25519 pair: (private key in OpenSSH PEM, public key line)."""
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return private, public.decode() + " resolute-shell"


async def _tensorboard_sources(
    session: AsyncSession, experiment_ids: tuple[int, ...], trial_ids: tuple[int, ...]
) -> list[dict[str, Any]]:
    """One entry per trial: its ids and its experiment's checkpoint storage."""
    if not experiment_ids and not trial_ids:
        raise InvalidArgument("a TensorBoard needs experiment ids or trial ids")
    for value in (*experiment_ids, *trial_ids):
        if not 0 < value < 2**31:
            raise InvalidArgument(f"id {value} is out of range")
    exps = {
        e.id: e
        for e in await session.scalars(select(Experiment).where(Experiment.id.in_(experiment_ids)))
    }
    missing = sorted(set(experiment_ids) - set(exps))
    if missing:
        raise NotFound(f"experiment {missing[0]} not found")
    trials = list(
        await session.scalars(
            select(Trial).where(Trial.experiment_id.in_(experiment_ids) | Trial.id.in_(trial_ids))
        )
    )
    missing = sorted(set(trial_ids) - {t.id for t in trials})
    if missing:
        raise NotFound(f"trial {missing[0]} not found")
    if len(trials) > MAX_TENSORBOARD_SOURCES:
        raise InvalidArgument(
            f"a TensorBoard shows at most {MAX_TENSORBOARD_SOURCES} trials, got {len(trials)}"
        )
    for exp_id in {t.experiment_id for t in trials} - set(exps):
        exp = await session.get(Experiment, exp_id)
        assert exp is not None  # trials reference their experiment
        exps[exp_id] = exp
    return [
        {
            "experiment_id": t.experiment_id,
            "trial_id": t.id,
            "checkpoint_storage": exps[t.experiment_id].config.get("checkpoint_storage") or {},
        }
        for t in sorted(trials, key=lambda t: t.id)
    ]


def _settings(kind: Kind, config: dict[str, Any], d: InteractiveDefaults) -> dict[str, Any]:
    if kind is Kind.NOTEBOOK:
        timeout = parse_timeout(config.get("idle_timeout"), "idle_timeout")
        return {
            "idle_timeout_s": timeout if timeout is not None else d.notebook_timeout_s,
            "idle_type": parse_idle_type(config.get("notebook_idle_type")).value,
        }
    if kind is Kind.TENSORBOARD:
        timeout = parse_timeout(config.get("idle_timeout"), "idle_timeout")
        return {
            "idle_timeout_s": timeout if timeout is not None else d.tensorboard_timeout_s,
            "tensorboard_args": list(config.get("tensorboard_args") or []),
        }
    return {}


async def launch(
    session: AsyncSession,
    owner: User,
    req: NewInteractive,
    pools: Any,
    defaults: InteractiveDefaults,
    *,
    now: datetime,
) -> CommandView:
    config = req.config
    if isinstance(config, str):
        try:
            config, _ = await asyncio.to_thread(load_yaml_mapping, config)
        except ExperimentConfigError as exc:
            raise InvalidArgument(f"invalid {req.kind.value.lower()} config:\n{exc}") from exc
    if not isinstance(config, dict):
        raise InvalidArgument("config must be a JSON object (or YAML text)")
    config = dict(config)
    resources = config.get("resources")
    if resources is None or (isinstance(resources, dict) and "slots" not in resources):
        config["resources"] = {**(resources or {}), "slots": DEFAULT_SLOTS}
    private_key = None
    extra: dict[str, Any] = {}
    if req.kind is Kind.SHELL:
        private_key, extra["public_key"] = ssh_key_pair()
        extra["user"] = _login_name(owner, pools)
    if req.kind is Kind.TENSORBOARD:
        extra["sources"] = await _tensorboard_sources(session, req.experiment_ids, req.trial_ids)
    view = await commands.launch(
        session,
        owner,
        NewCommand(
            config=config,
            files=req.files,
            template=req.template,
            workspace_id=req.workspace_id,
            task_type=req.kind.value,
            entrypoint=("python3", "-m", "harness.interactive", req.kind.value.lower()),
            private_key=private_key,
        ),
        pools,
        now=now,
    )
    stored = dict(view.command.config)
    settings = _settings(req.kind, stored, defaults)
    stored[SETTINGS_KEY] = {"kind": req.kind.value, **settings, **extra}
    if req.kind is Kind.TENSORBOARD:
        # The experiments asked for, with or without trials yet (Determined lists them so),
        # and those of the trials asked for.
        sources = {s["experiment_id"] for s in extra["sources"]}
        stored["experiment_ids"] = sorted(sources | set(req.experiment_ids))
        stored["trial_ids"] = list(req.trial_ids)
    view.command.config = stored
    return view


def _login_name(owner: User, pools: Any) -> str:
    """The name `ssh` logs in as: the owner's task user (the launcher makes sshd know it by this
    name whatever the task's uid is called on the agent)."""
    default = getattr(pools, "default_task_user", None) or DefaultTaskUser()
    try:
        return task_users.wire_task_user(owner, default).user or "root"
    except TaskUserError:
        return "root"


def service_address(task_id: str) -> str:
    return f"/proxy/{task_id}/"
