"""`det-agent` / `python -m agent`: run the agent daemon.

Every settings key is a flag named for its path (`hooks.on_connection_lost` →
`--hooks-on-connection-lost`); flags win over `DET_*` variables, which win over the YAML file.
Exit codes: 0 stopped by SIGTERM/SIGINT, 1 refused by the master, 2 bad configuration or
devices, 3 the master could not be reached (after the reconnect tries).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

from agent import task_python
from agent.config import (
    AgentSettings,
    ConfigError,
    flag_name,
    is_bool,
    is_list,
    leaf_keys,
    literal_choices,
    load_settings,
    nest,
    parse_list,
)
from agent.daemon import Daemon, ExitCode
from agent.devices import DeviceError, detect_devices
from agent.run_dir import blocked_for_others, open_to_task_users
from agent.runtimes import choose_runtime, make_runtime
from agent.runtimes.base import ContainerRuntime
from agent.task_user import AgentIdentity, describe

PROG = "det-agent"
log = logging.getLogger("agent")


def _list_arg(text: str) -> list[str]:
    try:
        return parse_list(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Run a Resolute agent: register this machine's slots with the master and "
        "run the tasks it places here. Flags > DET_* environment > YAML file > defaults; "
        "see docs/agent.md.",
    )
    for path, info in leaf_keys(AgentSettings):
        dest = ".".join(path)
        help_text = (info.description or "").replace("%", "%%")
        kwargs: dict[str, Any] = {"dest": dest, "default": None, "help": help_text}
        if is_bool(info):
            kwargs["action"] = argparse.BooleanOptionalAction
        elif is_list(info):
            kwargs.update(type=_list_arg, metavar="CMD")
        else:
            # Values are checked by the settings model, so a bad one reads like a bad YAML value.
            choices = literal_choices(info)
            kwargs["metavar"] = "{" + ",".join(choices) + "}" if choices else path[-1].upper()
        parser.add_argument(flag_name(path), **kwargs)
    return parser


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    """The flags given on the command line, nested like the YAML."""
    flat = {tuple(k.split(".")): v for k, v in vars(args).items() if v is not None}
    return nest(flat)


def settings_from_argv(argv: list[str] | None) -> AgentSettings:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return load_settings(**overrides_from(args))
    except ConfigError as exc:
        lines = str(exc).splitlines()
        parser.exit(ExitCode.CONFIG, f"{PROG}: invalid configuration: {'; '.join(lines)}\n")


async def open_runtime(settings: AgentSettings) -> ContainerRuntime:
    name = await asyncio.to_thread(choose_runtime, settings.container_runtime)
    return make_runtime(name, state_dir=settings.effective_work_dir / "process")


async def serve(settings: AgentSettings) -> int:
    try:
        devices = await asyncio.to_thread(
            detect_devices,
            slot_type=settings.slot_type,
            artificial_slots=settings.artificial_slots,
            agent_id=settings.agent_id,
            visible_gpus=_visible_gpus(settings),
        )
    except DeviceError as exc:
        log.error("%s", exc)
        return ExitCode.CONFIG
    runtime = await open_runtime(settings)
    if runtime.name == "process" and not check_task_python(settings):
        await runtime.close()
        return ExitCode.CONFIG
    log.info(
        "agent %s: %s runtime, %d slots (%s), master %s:%d, work dir %s",
        settings.agent_id,
        runtime.name,
        len(devices),
        ", ".join(sorted({d.type.value for d in devices})) or "none",
        settings.master_host,
        settings.master_port,
        settings.effective_work_dir,
    )
    pythons = [] if runtime.name != "process" else [settings.task_python or sys.executable]
    say_task_users(
        settings.effective_work_dir,
        pythons,
        settings.single_user,
        bind_mounted=runtime.name == "docker",
    )
    daemon = Daemon(settings, runtime, devices)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, daemon.stop)
    try:
        return await daemon.run()
    finally:
        await runtime.close()


def say_task_users(
    work_dir: Path, pythons: list[str], single_user: bool = False, bind_mounted: bool = False
) -> None:
    """Whether tasks run as their owners or this agent is single-user (agent/task_user.py);
    as root, whether task users can reach the work dir (pylib, their run dir) and the task
    Pythons (``pythons``, on the process runtime). ``bind_mounted`` (docker): tasks see their
    run dir and pylib as bind mounts, which the engine resolves on the host, so the folders
    above the work dir are never walked by the task's user and need no search permission."""
    identity = AgentIdentity.current(single_user)
    if not identity.can_switch:
        log.warning("%s", describe(identity))
        return
    log.info("%s", describe(identity))
    try:
        blocked = {str(work_dir): open_to_task_users(work_dir)}
    except OSError as exc:
        log.warning("cannot open the work dir %s to task users: %s", work_dir, exc)
        blocked = {}
    for python in pythons:
        found = shutil.which(python) or python  # a command name, a path or a venv folder
        blocked[python] = blocked_for_others(Path(os.path.realpath(found)))
    if bind_mounted:
        blocked.pop(str(work_dir), None)
    for what, folders in blocked.items():
        if folders:
            log.warning(
                "task users cannot pass through %s to reach %s: tasks will fail to start until "
                "those folders grant others search permission (chmod o+x) or another path is "
                "used",
                ", ".join(folders),
                what,
            )


def check_task_python(settings: AgentSettings) -> bool:
    """The configured task_python names a Python here (said at start-up, not at the first task);
    without one, the agent's own task venv is made when the first task needs it."""
    if settings.task_python is None:
        log.info(
            "process tasks run in the task venv %s (made on first use)", settings.own_task_venv
        )
        return True
    hidden = task_python.agent_bin_dirs()
    try:
        found = task_python.resolve(
            settings.task_python, search_path=os.environ.get("PATH", os.defpath), hidden=hidden
        )
    except task_python.BadTaskPython as exc:
        log.error("task_python %s: %s", settings.task_python, exc)
        return False
    log.info(
        "process tasks run %s unless their pool or experiment names another", found.interpreter
    )
    return True


def _visible_gpus(settings: AgentSettings) -> str | None:
    return settings.visible_gpus or os.environ.get("CUDA_VISIBLE_DEVICES") or None


def main(argv: list[str] | None = None) -> None:
    settings = settings_from_argv(argv)
    logging.basicConfig(
        level=settings.log.level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if settings.ignored_keys:
        log.warning(
            "ignoring Determined agent keys that have no meaning here: %s",
            ", ".join(settings.ignored_keys),
        )
    try:
        Path(settings.effective_work_dir).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        sys.exit(f"{PROG}: work_dir {settings.effective_work_dir}: {exc.strerror or exc}")
    sys.exit(asyncio.run(serve(settings)))


if __name__ == "__main__":
    main()
