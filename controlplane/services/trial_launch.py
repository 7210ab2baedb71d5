"""What a trial's containers run, from the trial and its experiment's expanded config.

The pure part (`build_trial_launch`) turns a `TrialLaunchInputs` into a `TrialLaunchSpec`;
`trial_launch_spec` loads the inputs. The container runs
``python3 -m harness.exec.launch <argv>`` (the agent adds the wrapper); the environment carries
Determined's trial variables (determined-behaviour §7.1) so that Core API code finds its trial,
hyperparameters and the checkpoint to resume from.

Image and user variables depend on the device type of the slots the trial lands on, as in
Determined (cpu, cuda or rocm): the spec holds one choice per device type and the scheduler
picks with `for_device` once it has chosen the devices. Without that step (a caller that only
sees a `LaunchSpec`), the choice follows ``resources.slots_per_trial``: cuda when > 0, cpu for
zero-slot trials. Agents without GPUs offer cpu slots, so on them a trial gets the cpu image.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from agent.protocol import Mount
from controlplane.db.models import Allocation, Checkpoint, Experiment, Trial, User
from controlplane.domain import task_info
from controlplane.domain.errors import NotFound
from controlplane.services.launch_spec import LaunchSpec
from controlplane.services.trials import archive_abandoned_metrics

DEVICE_TYPES = ("cpu", "cuda", "rocm")
DEFAULT_SHM_SIZE_BYTES = 4 * 1024**3  # task_container_defaults.shm_size_bytes in Determined
SHARED_FS_CONTAINER_PATH = "/determined_shared_fs"
# Anything sh would treat specially: such an entrypoint string runs under `sh -c`.
_SHELL_SYNTAX = re.compile(r"[|&;<>()$`*?\[\]{}~#\n\\]|^\s*[A-Za-z_][A-Za-z0-9_]*=")
_MEMORY = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmgtp]?)(i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}


@dataclass(frozen=True)
class DeviceChoice:
    image: str
    environment: Mapping[str, str]


@dataclass(frozen=True)
class TrialLaunchSpec(LaunchSpec):
    """A LaunchSpec that can be re-targeted to the device type the trial was placed on."""

    by_device: Mapping[str, DeviceChoice] = field(default_factory=dict)
    user_variables: frozenset[str] = frozenset()

    def for_device(self, device_type: str) -> LaunchSpec:
        choice = self.by_device.get(device_type)
        if choice is None:
            return self
        env = {k: v for k, v in self.environment.items() if k not in self.user_variables}
        return LaunchSpec(
            image=choice.image,
            argv=self.argv,
            environment={**choice.environment, **env},
            mounts=self.mounts,
            shm_size_bytes=self.shm_size_bytes,
            force_pull=self.force_pull,
            files=self.files,
            python=self.python,
        )


@dataclass(frozen=True)
class TrialLaunchInputs:
    """Everything the launch spec depends on, already loaded."""

    task_id: str
    trial_id: int
    experiment_id: int
    config: dict[str, Any]
    hparams: dict[str, Any]
    seed: int
    run_id: int
    username: str
    latest_checkpoint: str | None = None
    steps_completed: int = 0


class LaunchRefused(ValueError):
    """The trial's config cannot be launched (e.g. no entrypoint)."""


# Determined's launch layers that run as ours: `python3 -m determined.launch.torch_distributed`.
OUR_LAUNCHERS = {"determined.launch.torch_distributed": "harness.launch.torch_distributed"}
_DET_LAUNCHER = re.compile(r"(-m\s+)(determined\.launch\.torch_distributed)(?![\w.])")


def _our_launchers(argv: tuple[str, ...]) -> tuple[str, ...]:
    """``-m determined.launch.X`` becomes ``-m harness.launch.X`` (the trial has no determined)."""
    return tuple(
        OUR_LAUNCHERS.get(arg, arg) if i > 0 and argv[i - 1] == "-m" else arg
        for i, arg in enumerate(argv)
    )


def entrypoint_argv(entrypoint: str | list[str] | None) -> tuple[str, ...]:
    """A list runs as is. A string is split like a shell would when it is a plain command, and
    runs under ``sh -c`` when it uses shell syntax (pipes, variables, globs, ``&&``). Either way
    Determined's launch modules (``-m determined.launch.torch_distributed``) become ours."""
    if entrypoint is None or entrypoint == "" or entrypoint == []:
        raise LaunchRefused("the experiment has no entrypoint")
    if isinstance(entrypoint, list):
        return _our_launchers(tuple(entrypoint))
    if _SHELL_SYNTAX.search(entrypoint):
        return ("sh", "-c", _DET_LAUNCHER.sub(r"\1harness.launch.torch_distributed", entrypoint))
    try:
        argv = tuple(shlex.split(entrypoint))
    except ValueError:  # unbalanced quotes: let sh report it
        return ("sh", "-c", entrypoint)
    if not argv:
        raise LaunchRefused("the experiment's entrypoint is blank")
    return _our_launchers(argv)


def memory_bytes(value: int | str | None, default: int = DEFAULT_SHM_SIZE_BYTES) -> int:
    """``resources.shm_size``: bytes, or "4G", "512MiB", "1.5 GB" (binary units, as Docker)."""
    if value is None:
        return default
    if isinstance(value, int):
        return value
    m = _MEMORY.match(value)
    if not m:
        raise LaunchRefused(f"resources.shm_size {value!r} is not a memory size")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def _variables(entries: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in entries or []:
        name, _, value = entry.partition("=")
        out[name] = value
    return out


def _mounts(config: dict[str, Any]) -> tuple[Mount, ...]:
    mounts = [
        Mount(
            host_path=m["host_path"],
            container_path=m["container_path"],
            read_only=bool(m.get("read_only", False)),
        )
        for m in config.get("bind_mounts") or []
    ]
    storage = config.get("checkpoint_storage") or {}
    if storage.get("type") == "shared_fs" and storage.get("host_path"):
        target = storage.get("container_path") or SHARED_FS_CONTAINER_PATH
        if all(m.container_path != target for m in mounts):  # the user's own mount wins
            mounts.append(Mount(host_path=storage["host_path"], container_path=target))
    return tuple(mounts)


def default_device_type(config: dict[str, Any]) -> str:
    slots = (config.get("resources") or {}).get("slots_per_trial", 1)
    return "cuda" if slots and slots > 0 else "cpu"


def trial_environment(inputs: TrialLaunchInputs) -> dict[str, str]:
    """The master's trial variables (determined-behaviour §7.1), minus per-container ones."""
    env = {
        "DET_TASK_ID": inputs.task_id,
        "DET_TASK_TYPE": "TRIAL",
        "DET_USER": inputs.username,
        "DET_RESOURCES_TYPE": "docker-container",
        "DET_EXPERIMENT_ID": str(inputs.experiment_id),
        "DET_TRIAL_ID": str(inputs.trial_id),
        "DET_TRIAL_RUN_ID": str(inputs.run_id),
        "DET_TRIAL_SEED": str(inputs.seed),
        "DET_EXPERIMENT_CONFIG": json.dumps(inputs.config, separators=(",", ":")),
        "DET_HPARAMS": json.dumps(inputs.hparams, separators=(",", ":")),
        "DET_STEPS_COMPLETED": str(inputs.steps_completed),
    }
    if inputs.latest_checkpoint:
        env["DET_LATEST_CHECKPOINT"] = inputs.latest_checkpoint
    return env


def trial_files(inputs: TrialLaunchInputs) -> dict[str, str]:
    """``info/trial.json``: what the real determined package's TrialInfo reads (it never looks at
    the DET_TRIAL_* variables once prep_container has run), from the same inputs as those."""
    info = task_info.trial_info(
        trial_id=inputs.trial_id,
        experiment_id=inputs.experiment_id,
        trial_seed=inputs.seed,
        hparams=inputs.hparams,
        config=inputs.config,
        steps_completed=inputs.steps_completed,
        trial_run_id=inputs.run_id,
    )
    return {task_info.TRIAL_FILE: task_info.encode(info)}


def build_trial_launch(inputs: TrialLaunchInputs) -> TrialLaunchSpec:
    config = inputs.config
    environment = config.get("environment") or {}
    images = environment.get("image") or {}
    variables = environment.get("environment_variables") or {}
    if isinstance(images, str):
        images = dict.fromkeys(DEVICE_TYPES, images)
    if isinstance(variables, list):
        variables = dict.fromkeys(DEVICE_TYPES, variables)
    by_device = {
        kind: DeviceChoice(images.get(kind) or "", _variables(variables.get(kind)))
        for kind in DEVICE_TYPES
    }
    master = trial_environment(inputs)
    default = by_device[default_device_type(config)]
    return TrialLaunchSpec(
        image=default.image,
        argv=entrypoint_argv(config.get("entrypoint")),
        # The master's variables win: a user variable must not redirect the trial's identity.
        environment={**default.environment, **master},
        mounts=_mounts(config),
        shm_size_bytes=memory_bytes((config.get("resources") or {}).get("shm_size")),
        force_pull=bool(environment.get("force_pull_image", False)),
        files=trial_files(inputs),
        python=environment.get("python") or "",
        by_device=by_device,
        user_variables=frozenset(default.environment) - frozenset(master),
    )


async def _latest_checkpoint(session: AsyncSession, trial_id: int) -> Checkpoint | None:
    return await session.scalar(
        select(Checkpoint)
        .where(Checkpoint.trial_id == trial_id, Checkpoint.state == "COMPLETED")
        .order_by(Checkpoint.steps_completed.desc(), Checkpoint.report_time.desc())
        .limit(1)
    )


async def _resume_point(
    session: AsyncSession, trial: Trial, config: dict[str, Any]
) -> tuple[str | None, int]:
    """The checkpoint to resume from and its step: the trial's own latest one, else the
    searcher's warm start (source_checkpoint_uuid or source_trial_id's latest) from step 0."""
    own = await _latest_checkpoint(session, trial.id)
    if own is not None:
        return own.uuid, own.steps_completed
    searcher = config.get("searcher") or {}
    if searcher.get("source_checkpoint_uuid"):
        return str(searcher["source_checkpoint_uuid"]), 0
    if searcher.get("source_trial_id") is not None:
        source = await _latest_checkpoint(session, int(searcher["source_trial_id"]))
        if source is not None:
            return source.uuid, 0
    return None, 0


async def trial_launch_spec(session: AsyncSession, task_id: str) -> LaunchSpec:
    """The launch spec of the trial whose task is ``task_id``, for its next allocation.

    DET_TRIAL_RUN_ID counts the trial's allocations including the one being placed, so call
    this before that allocation is opened, in the same transaction (the scheduler does). It
    starts the run: what earlier runs reported past its resume point is archived (rollback).
    """
    trial = await session.scalar(select(Trial).where(Trial.task_id == task_id))
    if trial is None:
        raise NotFound(f"no trial has task {task_id}")
    exp = await session.get(Experiment, trial.experiment_id)
    if exp is None:
        raise NotFound(f"experiment {trial.experiment_id} not found")
    username = await session.scalar(select(User.username).where(User.id == exp.owner_id))
    runs = await session.scalar(
        select(func.count()).select_from(Allocation).where(Allocation.task_id == task_id)
    )
    latest, steps = await _resume_point(session, trial, exp.config)
    if runs:  # an earlier run may have gone past the point this one resumes from
        await archive_abandoned_metrics(session, trial, resume_step=steps, config=exp.config)
    return build_trial_launch(
        TrialLaunchInputs(
            task_id=task_id,
            trial_id=trial.id,
            experiment_id=exp.id,
            config=exp.config,
            hparams=trial.hparams,
            seed=trial.seed,
            run_id=(runs or 0) + 1,
            username=username or "",
            latest_checkpoint=latest,
            steps_completed=steps,
        )
    )
