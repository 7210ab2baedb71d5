"""Agent settings: the agent YAML, `DET_*` environment variables and command-line flags.

Every key has exactly one name in each place, derived from its path in the YAML:
`hooks.on_connection_lost` ↔ `DET_HOOKS_ON_CONNECTION_LOST` ↔ `--hooks-on-connection-lost`.
Precedence: flags > environment > YAML file > defaults (Determined's agent reads them in the same
order). List values are a JSON list or a shell-quoted string in the environment and in flags.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from agent.protocol import AGENT_ID_PATTERN
from agent.task_python import value_problem

DEFAULT_CONFIG_FILE = Path("/etc/determined/agent.yaml")
ENV_PREFIX = "DET_"
TASK_VENV_DIR = "task-venv"  # in the work dir: the process runtime's default task Python
SlotType = Literal["auto", "cuda", "gpu", "cpu", "none"]
RuntimeKind = Literal["auto", "docker", "process"]
InterruptionWatch = Literal["none", "aws", "gcp"]
# Keys of Determined's agent.yaml that mean nothing here (its agent's own API server, Fluent Bit,
# image cache); accepted so a Determined file loads, and reported as ignored.
DETERMINED_ONLY_KEYS = frozenset(
    {
        "api_enabled",
        "bind_ip",
        "bind_port",
        "tls_cert",
        "tls_key",
        "fluent",
        "debug",
        "label",
        "image_root",
        "singularity_options",
        "podman_options",
        "apptainer_options",
    }
)
INTERNAL = {"internal": True}


class ConfigError(ValueError):
    """Settings that cannot be used; one line per problem, each led by its key path."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HooksSettings(_Section):
    on_connection_lost: list[str] = Field(
        default_factory=list,
        description="Command (argv) run once when the agent gives up reconnecting to the master, "
        "before it exits; e.g. [shutdown, now] on cloud agents.",
    )


class TlsSettings(_Section):
    enabled: bool = Field(False, description="Dial the master with wss:// (and give tasks https).")
    skip_verify: bool = Field(False, description="Do not verify the master's certificate.")
    master_cert: Path | None = Field(None, description="CA bundle that signs the master's cert.")
    master_cert_name: str | None = Field(
        None, description="Name expected in the master's certificate (default: master_host)."
    )


class SecuritySettings(_Section):
    tls: TlsSettings = Field(default_factory=TlsSettings)


class LogSettings(_Section):
    level: Literal["debug", "info", "warning", "error"] = Field("info", description="Log level.")


class AgentSettings(BaseSettings):
    """Everything the agent reads at start-up."""

    model_config = SettingsConfigDict(extra="forbid", frozen=True)

    config_file: Path | None = Field(
        None,
        description="Agent YAML file (default: /etc/determined/agent.yaml when it exists).",
    )
    master_host: str = Field(min_length=1, description="Host name or address of the master.")
    master_port: int = Field(
        8080,
        ge=1,
        le=65535,
        description="Master port. 8080 here, the port our master listens on by default "
        "(Determined's agent defaults to 80, or 443 with TLS).",
    )
    agent_id: str = Field(
        default_factory=socket.gethostname,
        pattern=AGENT_ID_PATTERN,
        description="Unique id of this agent (default: the host name; cloud agents use their "
        "instance id).",
    )
    resource_pool: str = Field("default", min_length=1, description="Pool to join.")
    container_master_host: str | None = Field(
        None, description="Master host written into DET_MASTER for tasks (default: master_host)."
    )
    container_master_port: int | None = Field(
        None, ge=1, le=65535, description="Master port for tasks (default: master_port)."
    )
    advertise_address: str = Field(
        "127.0.0.1",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]*$",
        max_length=253,
        description="Address of this machine that the master can reach: notebooks, TensorBoards "
        "and shells listen there and the master's proxy connects to it (default: loopback, for a "
        "master on the same machine).",
    )
    slot_type: SlotType = Field(
        "auto",
        description="Which devices become slots: auto (cuda, else cpu), cuda (alias gpu), cpu "
        "(one slot for the machine) or none.",
    )
    artificial_slots: int = Field(
        0, ge=0, le=4096, description="Fake CPU slots for tests; when > 0 nothing is detected."
    )
    visible_gpus: str | None = Field(
        None,
        description="Comma-separated GPU indexes or UUIDs to use (default: CUDA_VISIBLE_DEVICES "
        "when set, else all).",
    )
    container_runtime: RuntimeKind = Field(
        "auto",
        description="docker, process, or auto: docker when a Docker engine answers, else process.",
    )
    agent_reconnect_attempts: int = Field(
        5, ge=0, le=10_000, description="Tries to reconnect after losing the master."
    )
    agent_reconnect_backoff: float = Field(
        5.0,
        ge=0,
        le=3600,
        description="The longest wait, in seconds, between two reconnect tries (they start at "
        "0.5 s and double).",
    )
    master_outage_s: float = Field(
        600.0,
        ge=0,
        le=7 * 24 * 3600,
        description="After losing the master (or while it says its database is away), keep "
        "trying to reconnect for at least this many seconds, whatever agent_reconnect_attempts "
        "says; 0 keeps only the attempts.",
    )
    hooks: HooksSettings = Field(default_factory=HooksSettings)
    interruption_watch: InterruptionWatch = Field(
        "none",
        description="Watch the instance metadata for a spot interruption or preemption notice: "
        "aws, gcp, or none (nothing is contacted). Cloud agents' start-up scripts set it.",
    )
    metadata_url: str | None = Field(
        None,
        description="Instance-metadata server the watch asks (default: the cloud's own, "
        "http://169.254.169.254 on aws, http://metadata.google.internal on gcp).",
    )
    interruption_poll_interval: float = Field(
        5.0, gt=0, le=300, description="Seconds between two looks for an interruption notice."
    )
    work_dir: Path | None = Field(
        None,
        description="Where the agent keeps task run directories and runtime state (default: "
        "$XDG_DATA_HOME/resolute-agent/<agent_id>, i.e. ~/.local/share/...).",
    )
    task_python: str | None = Field(
        None,
        description="The Python process-runtime tasks run (docs/runtimes.md): an interpreter, "
        "a virtualenv folder (absolute paths) or a command name such as python3.12. Default: a "
        "task venv the agent makes in <work_dir>/task-venv over its own packages (never the "
        "agent's own environment). The pool's task_container_defaults.python and the "
        "experiment's environment.python come first; docker ignores this key.",
    )
    single_user: bool = Field(
        False,
        description="Run every task as the agent's own Unix user even when the agent is root "
        "(one task user's tasks at a time, as an agent that is not root does): for a machine "
        "whose task Python or work dir other users cannot reach, e.g. `det deploy local` run "
        "as root from a home folder (docs/agent.md).",
    )
    container_auto_remove_disabled: bool = Field(
        False, description="Keep containers and run directories after they exit (debugging)."
    )
    http_proxy: str = Field("", description="Passed to tasks as http_proxy and HTTP_PROXY.")
    https_proxy: str = Field("", description="Passed to tasks as https_proxy and HTTPS_PROXY.")
    ftp_proxy: str = Field("", description="Passed to tasks as ftp_proxy and FTP_PROXY.")
    no_proxy: str = Field("", description="Passed to tasks as no_proxy and NO_PROXY.")
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    log: LogSettings = Field(default_factory=LogSettings)
    ignored_keys: tuple[str, ...] = Field(
        (), json_schema_extra=INTERNAL, description="Determined-only keys found in the file."
    )

    @field_validator("slot_type", mode="before")
    @classmethod
    def _gpu_means_cuda(cls, value: Any) -> Any:
        if isinstance(value, str) and value.lower() == "rocm":
            raise ValueError("rocm slots are not supported; use auto, cuda, cpu or none")
        return "cuda" if value == "gpu" else value

    @field_validator("metadata_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/")

    @field_validator("task_python")
    @classmethod
    def _python_value(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = os.path.expanduser(value.strip())
        problem = value_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("config_file", "work_dir")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @property
    def effective_work_dir(self) -> Path:
        if self.work_dir is not None:
            return self.work_dir
        data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local/share")
        return data / "resolute-agent" / self.agent_id

    @property
    def own_task_venv(self) -> Path | None:
        """The task venv the agent makes for itself; None when task_python names the Python."""
        return None if self.task_python else self.effective_work_dir / TASK_VENV_DIR

    @property
    def task_master_host(self) -> str:
        return self.container_master_host or self.master_host

    @property
    def task_master_port(self) -> int:
        return self.container_master_port or self.master_port

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, _EnvSource(settings_cls), _YamlSource(settings_cls, init_settings))


# --- key paths shared by the environment, the flags and the docs ------------------------------


def leaf_keys(model: type[BaseModel] = AgentSettings) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every settable key as (path, field info), nested sections flattened, in model order."""
    for name, info in model.model_fields.items():
        if info.json_schema_extra == INTERNAL:
            continue
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            for path, leaf in leaf_keys(annotation):
                yield (name, *path), leaf
        else:
            yield (name,), info


def env_name(path: tuple[str, ...]) -> str:
    return ENV_PREFIX + "_".join(path).upper()


def flag_name(path: tuple[str, ...]) -> str:
    return "--" + "-".join(path).replace("_", "-")


def is_list(info: Any) -> bool:
    return get_origin(info.annotation) is list


def is_bool(info: Any) -> bool:
    return info.annotation is bool


def parse_list(text: str) -> list[str]:
    """A JSON list of strings, or a shell-quoted command line."""
    stripped = text.strip()
    if stripped.startswith("["):
        value = json.loads(stripped)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError("expected a JSON list of strings")
        return value
    return shlex.split(stripped)


def nest(flat: Mapping[tuple[str, ...], Any]) -> dict[str, Any]:
    """{("hooks", "on_connection_lost"): v} → {"hooks": {"on_connection_lost": v}}."""
    out: dict[str, Any] = {}
    for path, value in flat.items():
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return out


def merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge: keys of `top` win, sections are merged key by key."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


class _EnvSource(PydanticBaseSettingsSource):
    """`DET_<KEY_PATH>` for every leaf key; lists as JSON or shell words."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        flat: dict[tuple[str, ...], Any] = {}
        for path, info in leaf_keys(self.settings_cls):
            raw = os.environ.get(env_name(path))
            if raw is None:
                continue
            if is_list(info):
                try:
                    flat[path] = parse_list(raw)
                except ValueError as exc:
                    raise ConfigError(f"{'.'.join(path)} ({env_name(path)}): {exc}") from None
            else:
                flat[path] = raw
        return nest(flat)


class _YamlSource(PydanticBaseSettingsSource):
    def __init__(self, settings_cls: type[BaseSettings], init: PydanticBaseSettingsSource):
        super().__init__(settings_cls)
        self._init = init

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = config_file_path(self._init().get("config_file"))
        return read_yaml(path) if path is not None else {}


def config_file_path(explicit: Any) -> Path | None:
    """The flag, else DET_CONFIG_FILE, else /etc/determined/agent.yaml when it exists."""
    if explicit:
        return Path(explicit).expanduser()
    from_env = os.environ.get(env_name(("config_file",)))
    if from_env:
        return Path(from_env).expanduser()
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"config file {path}: {exc.strerror or exc}") from None
    try:
        data = YAML(typ="safe").load(text)
    except YAMLError as exc:
        raise ConfigError(f"config file {path}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: the top level must be a mapping")
    data.setdefault("config_file", str(path))
    ignored = sorted(k for k in data if k in DETERMINED_ONLY_KEYS)
    if ignored:
        data = {k: v for k, v in data.items() if k not in DETERMINED_ONLY_KEYS}
        data["ignored_keys"] = tuple(ignored)
    return data


def format_errors(exc: ValidationError) -> str:
    """One line per problem: `agent_reconnect_attempts: Input should be a valid integer`."""
    lines = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        lines.append(f"{where}: {message}")
    return "\n".join(lines)


def load_settings(config_file: Path | None = None, **overrides: Any) -> AgentSettings:
    """Flags (`overrides`, nested dicts for sections) > environment > YAML > defaults.

    Raises ConfigError with one line per problem.
    """
    if config_file is not None:
        overrides["config_file"] = config_file
    try:
        return AgentSettings(**overrides)
    except ValidationError as exc:
        raise ConfigError(format_errors(exc)) from None


def literal_choices(info: Any) -> tuple[str, ...] | None:
    """The allowed values of a Literal-typed key, for --help."""
    if get_origin(info.annotation) is Literal:
        return tuple(str(a) for a in get_args(info.annotation))
    return None
