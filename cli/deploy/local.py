"""`det deploy local`: a master and N agents as detached processes on this machine.

The deployment lives in one data directory: the master's embedded default (SQLite, shared_fs
checkpoints), the generated admin password, one log per process under `logs/`, and
`local-deployment.json`, which records what was started (pids with their kernel start times, so a
pid the kernel has since given to another program is never signalled). `down` reads that file, so
it works from any shell and is safe to repeat.

Tasks on the process runtime never run in the environment the master and agents run in: `up`
makes a task virtualenv once, `<data_dir>/task-venv`, layered over that environment's packages
(torch is not downloaded again, and a `pip install` inside a task lands in the task venv; see
agent/task_venv.py), and starts the agents with `--task-python` pointing at it. `--task-python`
on `up` names another Python instead (nothing is made then). Docker agents use their images.

Pure parts (the plan of what to run, the state file's shape) are separate from the process and
network edges so they can be tested without starting anything.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from cli.auth import login
from cli.client import ApiClient
from cli.deploy import task_access
from cli.deploy.processes import (
    Launch,
    ProcessRecord,
    alive,
    child_environment,
    spawn,
    terminate,
)
from cli.errors import CliError
from cli.yaml_config import load_mapping

STATE_FILE = "local-deployment.json"
PASSWORD_FILE = "admin-password"
LOG_DIR = "logs"
AGENT_ID_PREFIX = "local-agent-"
AGENTS_DIR = "agents"  # one work dir per agent: run dirs, the process runtime's task folders
TASK_VENV_DIR = "task-venv"  # the process runtime's task Python, shared by the agents
TASK_VENV_TIMEOUT_S = 300.0
RUNTIMES = ("auto", "docker", "process")
CONTAINER_AGENT_LABEL = "ai.determined.container.agent"
# Client-side settings a developer may have exported; the daemons get their settings as flags.
LOG_TAIL_LINES = 25


def default_data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The master's own embedded default: $XDG_DATA_HOME/resolute or ~/.local/share/resolute."""
    env = os.environ if env is None else env
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "resolute"


def agent_id(index: int) -> str:
    return f"{AGENT_ID_PREFIX}{index}"


@dataclass(frozen=True)
class LocalOptions:
    """What `det deploy local up` was asked for; validated on construction."""

    data_dir: Path
    agents: int = 1
    slots_per_agent: int | None = None
    runtime: str = "auto"
    port: int = 8080
    host: str = "127.0.0.1"
    master_config: Path | None = None
    # The process runtime's task Python: a path (an interpreter or a virtualenv) or a command
    # name; None makes and uses <data_dir>/task-venv.
    task_python: str | None = None

    def __post_init__(self) -> None:
        if self.agents < 0:
            raise CliError(f"--agents must be 0 or more, not {self.agents}")
        if self.slots_per_agent is not None and self.slots_per_agent < 1:
            raise CliError(f"--slots-per-agent must be at least 1, not {self.slots_per_agent}")
        if self.runtime not in RUNTIMES:
            raise CliError(f"--runtime must be one of {', '.join(RUNTIMES)}, not {self.runtime!r}")
        if not 1 <= self.port <= 65535:
            raise CliError(f"--port must be between 1 and 65535, not {self.port}")
        if self.master_config is not None and not self.master_config.is_file():
            raise CliError(f"--master-config {self.master_config}: no such file")
        if self.task_python is not None:
            value = self.task_python.strip()
            if not value:
                raise CliError("--task-python must not be empty")
            if "/" in value and not Path(value).expanduser().exists():
                raise CliError(f"--task-python {value}: no such file or directory")

    @property
    def master_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def agent_ids(self) -> list[str]:
        return [agent_id(i) for i in range(self.agents)]


def master_launch(options: LocalOptions, python: str, password: str) -> Launch:
    argv = [python, "-m", "controlplane", "--host", options.host, "--port", str(options.port)]
    argv += ["--data-dir", str(options.data_dir)]
    if options.master_config is not None:
        argv += ["--config-file", str(options.master_config)]
    return Launch(
        name="master",
        role="master",
        argv=tuple(argv),
        # Only the first start of a fresh database uses it; later starts keep the stored hash.
        env={"DET_SECURITY_INITIAL_USER_PASSWORD": password},
        log=options.data_dir / LOG_DIR / "master.log",
    )


def agent_work_dir(options: LocalOptions, index: int) -> Path:
    return options.data_dir / AGENTS_DIR / agent_id(index)


def agent_launch(
    options: LocalOptions,
    index: int,
    runtime: str,
    python: str,
    task_python: str = "",
    single_user: bool = False,
) -> Launch:
    name = agent_id(index)
    argv = [python, "-m", "agent", "--master-host", options.host]
    argv += ["--master-port", str(options.port), "--agent-id", name]
    argv += ["--container-runtime", runtime, "--work-dir", str(agent_work_dir(options, index))]
    if options.slots_per_agent is not None:
        argv += ["--artificial-slots", str(options.slots_per_agent)]
    if task_python:
        argv += ["--task-python", task_python]
    if single_user:
        argv += ["--single-user"]
    return Launch(
        name=name,
        role="agent",
        argv=tuple(argv),
        env={},  # the process runtime puts the task's Python first on tasks' PATH
        log=options.data_dir / LOG_DIR / f"{name}.log",
    )


def plan(
    options: LocalOptions,
    runtime: str,
    python: str,
    password: str,
    task_python: str = "",
    single_user: bool = False,
) -> list[Launch]:
    """The master first, then the agents in id order (``task_python``: see `task_python_for`;
    ``single_user``: see `task_user_blockers`)."""
    launches = [master_launch(options, python, password)]
    launches += [
        agent_launch(options, i, runtime, python, task_python, single_user)
        for i in range(options.agents)
    ]
    return launches


def task_user_blockers(paths: list[Path], euid: int | None = None) -> list[str]:
    """Run as root, the folders on the way to ``paths`` (the task Python, the data dir) that
    other users cannot pass through (no o+x): agents started there could not start tasks as
    their owners' Unix users (Python under a 0700 /root, say), so they run single-user."""
    if (os.geteuid() if euid is None else euid) != 0:
        return []
    blocked: list[str] = []
    for path in paths:
        for folder in reversed(Path(os.path.abspath(path)).parents):
            try:
                mode = folder.stat().st_mode
            except OSError:
                continue
            if not mode & 0o001 and str(folder) not in blocked:
                blocked.append(str(folder))
    return blocked


TASK_VENV_MARKER = "resolute-task-venv.json"  # agent/task_venv.py's record of its layer


def layered_dirs(venv: Path) -> list[Path]:
    """The site-packages folders a task venv made by agent/task_venv.py reads from the
    environment below it (torch, in .venv): task users must reach them too."""
    try:
        layer = json.loads((venv / TASK_VENV_MARKER).read_text()).get("layer") or []
    except (OSError, ValueError, AttributeError):
        return []
    return [Path(d) for d in layer if isinstance(d, str)]


def checkpoint_folder(options: LocalOptions) -> Path:
    """The shared_fs folder tasks write checkpoints to: the embedded default's, or the master
    config's host_path (another storage type: the data directory's, unused by tasks)."""
    default = options.data_dir / "checkpoints"
    if options.master_config is None:
        return default
    _, config = load_mapping(options.master_config, "--master-config")
    storage = config.get("checkpoint_storage")
    if isinstance(storage, dict) and storage.get("type", "shared_fs") == "shared_fs":
        host = storage.get("host_path")
        if isinstance(host, str) and host:
            return Path(host).expanduser()
    return default


def task_needs(options: LocalOptions, runtime: str, python: str, venv: Path | None) -> list[Path]:
    """What the task users (process runtime) or the Docker engine (docker) must reach: the data
    directory and the checkpoint folder; on the process runtime also the task's interpreter
    (``python``: what `up` runs, unless --task-python names one) and the packages the task venv
    (``venv``, or a --task-python folder made by agent/task_venv.py) is layered over."""
    needs = [options.data_dir, checkpoint_folder(options)]
    if runtime != "process":
        return needs
    asked = options.task_python
    needs.append(Path(os.path.realpath(shutil.which(asked or "") or python)))
    venvs = [venv] if venv is not None else []
    if asked and Path(asked).expanduser().is_dir():
        venvs.append(Path(asked).expanduser())
    for folder in venvs:
        needs += layered_dirs(folder)
    return needs


def task_venv_path(data_dir: Path) -> Path:
    return data_dir / TASK_VENV_DIR


def task_python_for(options: LocalOptions, runtime: str) -> tuple[str, Path | None]:
    """The agents' --task-python and the task venv to make for it (None: nothing to make).

    Docker agents get none (their tasks use the image's Python); process agents get the one
    asked for with --task-python (paths made absolute, command names as they are), else the
    deployment's own task venv.
    """
    if runtime != "process" or options.agents == 0:
        return "", None
    if options.task_python is not None:
        value = options.task_python.strip()
        if "/" in value:
            value = os.path.abspath(Path(value).expanduser())  # not resolved: keep a venv's link
        return value, None
    venv = task_venv_path(options.data_dir)
    return str(venv), venv


def make_task_venv(python: str, target: Path, timeout_s: float = TASK_VENV_TIMEOUT_S) -> None:
    """Make (or reuse) the task venv at ``target`` over ``python``'s packages; the agent package
    does the work (`python -m agent.task_venv`), as it runs the agents themselves."""
    argv = [python, "-m", "agent.task_venv", str(target)]
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env=child_environment(os.environ, {}),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CliError(f"cannot make the task venv {target}: {exc}") from None
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip() or f"exit {done.returncode}"
        raise CliError(f"cannot make the task venv {target}: {why}")


def choose_runtime(requested: str, docker_answers: Callable[[], bool]) -> str:
    """`auto` is docker when an engine answers, else process; an explicit choice is checked."""
    if requested == "process":
        return "process"
    if docker_answers():
        return "docker"
    if requested == "docker":
        raise CliError(
            "--runtime docker: no Docker engine answers (`docker info` failed); start dockerd "
            "or use --runtime process"
        )
    return "process"


# ---------------------------------------------------------------------------------------------
# The state file


@dataclass
class Deployment:
    data_dir: str
    master_url: str
    port: int
    runtime: str
    agent_ids: list[str]
    slots_per_agent: int | None
    started_at: float
    processes: list[ProcessRecord] = field(default_factory=list)
    task_python: str = ""  # what the process agents run tasks with ("": docker, or no agents)
    # Folders other users cannot pass through, which made the agents single-user (empty: tasks
    # run as their owners' Unix users when the agents are root).
    single_user_because: list[str] = field(default_factory=list)
    # How tasks run and why, as `up` printed it (cli/deploy/task_access.py; "" from older ups).
    task_users: str = ""

    def by_role(self, role: str) -> list[ProcessRecord]:
        return [p for p in self.processes if p.role == role]

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, **asdict(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Deployment:
        if data.get("version") != 1:
            raise ValueError(f"unknown state version {data.get('version')!r}")
        fields = {k: v for k, v in data.items() if k != "version"}
        fields["processes"] = [ProcessRecord(**p) for p in fields.get("processes", [])]
        return cls(**fields)


def state_path(data_dir: Path) -> Path:
    return data_dir / STATE_FILE


def read_state(data_dir: Path) -> Deployment | None:
    path = state_path(data_dir)
    try:
        return Deployment.from_json(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError, KeyError) as exc:
        raise CliError(f"{path} is not a deployment record ({exc}); delete it by hand") from None


def write_state(deployment: Deployment) -> None:
    path = state_path(Path(deployment.data_dir))
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(deployment.to_json(), indent=2), encoding="utf-8")
    os.replace(tmp, path)


def remove_state(data_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        state_path(data_dir).unlink()


# ---------------------------------------------------------------------------------------------
# Ports, containers and task processes (starting and stopping: cli/deploy/processes.py)


def port_in_use(host: str, port: int) -> bool:
    """Something listens on (or holds) host:port, so the master could not bind it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def docker_answers(timeout_s: float = 15.0) -> bool:
    """A Docker engine answers `docker info` (the CLI: the SDK belongs to the agent)."""
    if shutil.which("docker") is None:
        return False
    try:
        done = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and bool(done.stdout.strip())


def docker_rootless(timeout_s: float = 15.0) -> bool:
    """The engine that answers runs rootless (`docker info` lists the `name=rootless` security
    option): it mounts bind sources as its own, unprivileged user."""
    try:
        done = subprocess.run(
            ["docker", "info", "--format", "{{json .SecurityOptions}}"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and "name=rootless" in done.stdout


def remove_task_containers(agent_ids: Sequence[str]) -> int:
    """Remove the docker task containers our agents left (they are detached, not killed, when
    an agent stops, so that a restarted agent can reattach them)."""
    if not agent_ids or shutil.which("docker") is None:
        return 0
    found: list[str] = []
    for agent in agent_ids:
        try:
            listed = subprocess.run(
                ["docker", "ps", "-aq", "--filter", f"label={CONTAINER_AGENT_LABEL}={agent}"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return 0
        found += listed.stdout.split()
    if found:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(["docker", "rm", "-f", *found], capture_output=True, timeout=60)
    return len(found)


def task_supervisors(agents_dir: Path) -> list[ProcessRecord]:
    """The process runtime's task supervisors still running under our agents' work dirs.

    The runtime keeps one folder per task with `pids.json` (the supervisor's pid and start
    time) and, once the task ended, `exit.json`; SIGTERM to a supervisor reaches the task's
    process group, and the task dies with its supervisor (parent-death signal).
    """
    found = []
    for pids_file in sorted(agents_dir.glob("*/**/pids.json")):
        if (pids_file.parent / "exit.json").exists():
            continue
        try:
            pids = json.loads(pids_file.read_text())
            record = ProcessRecord(
                name=pids_file.parent.name,
                role="task",
                pid=int(pids["supervisor_pid"]),
                start_ticks=int(pids["supervisor_start"]),
                log="",
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if alive(record):
            found.append(record)
    return found


def log_tail(path: str | Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = Path(path).read_bytes()[-64_000:].decode("utf-8", "replace")
    except OSError as exc:
        return f"(cannot read {path}: {exc.strerror})"
    tail = text.splitlines()[-lines:]
    return "\n".join(f"  | {line}" for line in tail) if tail else "  (the log is empty)"


def ensure_password(data_dir: Path) -> str:
    """The admin password of this deployment, made once and readable only by its owner."""
    path = data_dir / PASSWORD_FILE
    if path.exists() and path.read_text().strip():
        return path.read_text().strip()
    old = os.umask(0o077)
    try:
        path.write_text(secrets.token_urlsafe(18) + "\n")
    finally:
        os.umask(old)
    return path.read_text().strip()


# ---------------------------------------------------------------------------------------------
# up / down


class AlreadyRunning(CliError):
    def __init__(self, deployment: Deployment) -> None:
        super().__init__(f"a local deployment is already running from {deployment.data_dir}")
        self.deployment = deployment


@dataclass
class Started:
    deployment: Deployment
    password: str
    token: str
    cleaned_up: list[str] = field(default_factory=list)


def _failure(what: str, record: ProcessRecord) -> CliError:
    return CliError(f"{what}; last lines of {record.log}:\n{log_tail(record.log)}")


def wait_for_master(
    record: ProcessRecord,
    url: str,
    timeout_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    deadline = clock() + timeout_s
    with httpx.Client(timeout=2.0) as http:
        while True:
            try:
                if http.get(f"{url}/info").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if not alive(record):
                raise _failure("the master exited during start-up", record)
            if clock() > deadline:
                late = f"the master did not answer {url}/info within {timeout_s:g} s"
                raise _failure(late, record)
            sleep(0.1)


def wait_for_agents(
    client: ApiClient,
    records: Sequence[ProcessRecord],
    slots: int | None,
    timeout_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Until every agent is listed as connected (with its slots, when we set them)."""
    deadline = clock() + timeout_s
    waiting = {r.name: r for r in records}
    while waiting:
        listed = {a.get("id"): a for a in client.paginate("/api/v1/agents", "agents")}
        for name in list(waiting):
            agent = listed.get(name)
            if agent is None or agent.get("connected") is False:
                continue
            if slots is not None and len(agent.get("slots") or {}) != slots:
                continue
            del waiting[name]
        for record in waiting.values():
            if not alive(record):
                raise _failure(f"agent {record.name} exited during start-up", record)
        if not waiting:
            return
        if clock() > deadline:
            first = next(iter(waiting.values()))
            names = ", ".join(waiting)
            raise _failure(f"agents not registered within {timeout_s:g} s: {names}", first)
        sleep(0.2)


def check_task_access(
    options: LocalOptions,
    runtime: str,
    python: str,
    venv: Path | None,
    euid: int,
    detect_rootless: Callable[[], bool] | None = None,
) -> tuple[task_access.TaskAccess, list[str]]:
    """How the agents' tasks will run (cli/deploy/task_access.py) and the blocked folders that
    made them single-user; raises CliError where no task could start."""
    blockers: list[str] = []
    if options.agents:
        blockers = task_user_blockers(task_needs(options, runtime, python, venv), euid)
    rootless = runtime == "docker" and bool(blockers) and (detect_rootless or docker_rootless)()
    access = task_access.decide(runtime, euid, blockers, rootless)
    if access.error is not None:
        raise CliError(access.error)
    return access, blockers if access.single_user else []


def up(
    options: LocalOptions,
    *,
    python: str = sys.executable,
    detect_docker: Callable[[], bool] | None = None,
    detect_rootless: Callable[[], bool] | None = None,
    euid: int | None = None,
    timeout_s: float = 60.0,
    grace_s: float = 10.0,
) -> Started:
    """Start the master, wait for /info, start the agents, wait until they are registered.

    Refuses (CliError, nothing started) a deployment whose tasks could not start
    (cli/deploy/task_access.py). On any failure everything this call started is stopped again
    before the error propagates. ``detect_*`` default to asking the engine (docker_answers,
    docker_rootless), ``euid`` to this process's.
    """
    data_dir = options.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    cleaned: list[str] = []
    previous = read_state(data_dir)
    if previous is not None:
        live = [r for r in previous.processes if alive(r)]
        if live and len(live) == len(previous.processes):
            raise AlreadyRunning(previous)
        # A partial deployment (something crashed or was killed): finish stopping it.
        terminate(live, grace_s)
        remove_state(data_dir)
        cleaned = [r.name for r in live]
    if port_in_use(options.host, options.port):
        raise CliError(
            f"port {options.port} on {options.host} is already in use; stop what listens there "
            "or choose another with --port"
        )
    runtime = choose_runtime(options.runtime, detect_docker or docker_answers)
    password = ensure_password(data_dir)
    # The embedded default's shared_fs checkpoint storage: docker bind-mounts it into every
    # trial and refuses a source path that does not exist yet. Tasks run as their owners' Unix
    # users when the agents are root: every one of them writes here (1777, as /tmp).
    checkpoints = data_dir / "checkpoints"
    checkpoints.mkdir(exist_ok=True)
    if checkpoints.stat().st_uid == os.geteuid():
        checkpoints.chmod(0o1777)  # the master makes its storage_path folder the same way
    task_python, venv = task_python_for(options, runtime)
    if venv is not None:
        make_task_venv(python, venv)
    access, blockers = check_task_access(
        options, runtime, python, venv, os.geteuid() if euid is None else euid, detect_rootless
    )
    launches = plan(options, runtime, python, password, task_python, access.single_user)
    deployment = Deployment(
        data_dir=str(data_dir),
        master_url=options.master_url,
        port=options.port,
        runtime=runtime,
        agent_ids=options.agent_ids,
        slots_per_agent=options.slots_per_agent,
        started_at=time.time(),
        task_python=task_python,
        single_user_because=blockers,
        task_users=access.summary if options.agents else "",
    )
    try:
        master = spawn(launches[0])
        deployment.processes.append(master)
        write_state(deployment)
        wait_for_master(master, options.master_url, timeout_s)
        for launch in launches[1:]:
            deployment.processes.append(spawn(launch))
            write_state(deployment)
        with ApiClient(options.master_url, retries=2) as client:
            client.token = login(client, "admin", password).token
            wait_for_agents(client, deployment.by_role("agent"), options.slots_per_agent, timeout_s)
    except BaseException:
        terminate(deployment.by_role("agent"), grace_s)
        terminate(deployment.by_role("master"), grace_s)
        remove_state(data_dir)
        raise
    return Started(deployment=deployment, password=password, token=client.token, cleaned_up=cleaned)


@dataclass
class Stopped:
    stopped: list[str]
    killed: list[str]
    tasks: int


def down(data_dir: Path, *, grace_s: float = 10.0) -> Stopped | None:
    """Stop the agents, their task containers, then the master; None when nothing was recorded."""
    deployment = read_state(data_dir)
    if deployment is None:
        return None
    agents, masters = deployment.by_role("agent"), deployment.by_role("master")
    live = [r.name for r in deployment.processes if alive(r)]
    killed = terminate(agents, grace_s)
    if deployment.runtime == "docker":
        tasks = remove_task_containers(deployment.agent_ids)
    else:
        supervisors = task_supervisors(data_dir / AGENTS_DIR)
        killed += terminate(supervisors, grace_s)
        tasks = len(supervisors)
    killed += terminate(masters, grace_s)
    remove_state(data_dir)
    return Stopped(stopped=live, killed=[r.name for r in killed], tasks=tasks)
