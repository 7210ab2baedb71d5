"""Master settings: the master YAML plus `DET_*` environment variables.

Nested keys map to environment variables with `_` between levels and the `DET_` prefix, e.g.
`security.initial_user_password` ↔ `DET_SECURITY_INITIAL_USER_PASSWORD`, `db.url` ↔ `DET_DB_URL`.
Environment wins over the YAML file, as in Determined.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from apscheduler.triggers.cron import CronTrigger
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    IPvAnyNetwork,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict
from ruamel.yaml import YAML

from controlplane.domain.login_throttle import ThrottlePolicy
from controlplane.domain.task_user import MAX_ID, DefaultTaskUser
from provisioners.config import ProviderConfig, parse_pool_providers
from resource_pools.config import ResourcesConfig
from resource_pools.config_errors import format_config_errors

DEFAULT_DATA_DIR = Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local/share")) / "resolute"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DbSettings(_Section):
    url: str | None = Field(
        None,
        description="SQLAlchemy async URL, e.g. postgresql+asyncpg://postgres@127.0.0.1:5432/det. "
        "Unset: SQLite in the data directory (the embedded default).",
    )
    pool_size: int = Field(10, ge=1, le=200, description="Connections kept open (PostgreSQL).")
    echo: bool = Field(False, description="Log every SQL statement.")


class DefaultTaskUserSettings(_Section):
    """What unlinked users' tasks run as on agents that run as root (docs/operations.md)."""

    per_user: bool = Field(
        True,
        description="Each unlinked user N gets a Unix user of its own: uid uid_base+N, gid "
        "gid_base+N (no passwd entry needed). False: every unlinked user runs as uid/gid below.",
    )
    uid_base: int = Field(70000, ge=1000, le=2**31 - 1, description="See per_user.")
    gid_base: int = Field(70000, ge=1000, le=2**31 - 1, description="See per_user.")
    uid: int = Field(65534, ge=1, le=MAX_ID, description="With per_user false (never 0).")
    gid: int = Field(65534, ge=1, le=MAX_ID, description="With per_user false (never 0).")
    user: str = Field("nobody", min_length=1, max_length=255, description="Its name.")
    group: str = Field("nogroup", min_length=1, max_length=255, description="Its name.")

    def policy(self) -> DefaultTaskUser:
        return DefaultTaskUser(**self.model_dump())


class TlsSettings(_Section):
    cert: Path | None = Field(
        None, description="PEM certificate (chain) the master serves HTTPS with, as in Determined."
    )
    key: Path | None = Field(None, description="PEM private key of `cert`.")

    @model_validator(mode="after")
    def _both_or_neither(self) -> TlsSettings:
        if (self.cert is None) != (self.key is None):
            raise ValueError("security.tls.cert and security.tls.key must be set together")
        for name, path in (("cert", self.cert), ("key", self.key)):
            if path is not None and not Path(path).expanduser().is_file():
                raise ValueError(f"security.tls.{name}: no such file: {path}")
        return self

    @property
    def enabled(self) -> bool:
        return self.cert is not None


class LoginThrottleSettings(_Section):
    """Backoff after failed logins, per user name and per client address (docs/security.md)."""

    enabled: bool = Field(True, description="Throttle password guessing (false: never 429).")
    free_attempts_per_user: int = Field(
        5, ge=1, le=1000, description="Failed logins a user name gets before delays start."
    )
    free_attempts_per_address: int = Field(
        30, ge=1, le=100_000, description="Failed logins a client address gets before delays."
    )
    base_delay_s: float = Field(
        1.0, gt=0, le=3600, description="The first delay; each further failure doubles it."
    )
    max_delay_s: float = Field(300.0, gt=0, le=86_400, description="The longest delay.")
    forgive_after_s: float = Field(
        600.0,
        gt=0,
        description="One failed login is forgiven per this many seconds without another.",
    )
    refusal_delay_s: float = Field(
        1.0,
        ge=0,
        le=60,
        description="A refused login is answered after this long (or its Retry-After, if "
        "shorter): a client that ignores Retry-After gets one answer per this per connection.",
    )
    max_tracked: int = Field(
        50_000,
        ge=100,
        description="Most user names (and, separately, addresses) remembered; the least "
        "recently tried are forgotten first.",
    )
    trusted_proxies: list[IPvAnyNetwork] = Field(
        default_factory=list,
        description="Reverse proxies (addresses or CIDR networks) whose X-Forwarded-For names the "
        "client; from any other peer the header is ignored.",
    )

    @model_validator(mode="after")
    def _delays_in_order(self) -> LoginThrottleSettings:
        if self.base_delay_s > self.max_delay_s:
            raise ValueError("login_throttle.base_delay_s must not exceed max_delay_s")
        return self

    def policy(self) -> ThrottlePolicy:
        return ThrottlePolicy(
            free_per_user=self.free_attempts_per_user,
            free_per_address=self.free_attempts_per_address,
            base_delay_s=self.base_delay_s,
            max_delay_s=self.max_delay_s,
            decay_s=self.forgive_after_s,
        )


class AuthzSettings(_Section):
    """Who may do what (docs/rbac.md): Determined's `security.authz.type`."""

    type: Literal["basic", "rbac"] = Field(
        "basic",
        description="basic: owners and admins change objects, everyone reads (the default). "
        "rbac: every route needs its permission, granted by roles assigned to users and groups "
        "cluster-wide or per workspace; admin users hold ClusterAdmin.",
    )


class SecuritySettings(_Section):
    initial_user_password: SecretStr | None = Field(
        None,
        description="Password given to the built-in `admin` and `determined` users on first start. "
        "Unset: a strong random password is generated, printed once and stored only hashed.",
    )
    allow_empty_passwords: bool = Field(
        False, description="Allow users (including the built-in ones) to have an empty password."
    )
    token_lifetime_s: int = Field(
        7 * 24 * 3600, ge=60, description="How long a login token stays valid, in seconds."
    )
    default_task_user: DefaultTaskUserSettings = Field(
        default_factory=DefaultTaskUserSettings,
        description="The Unix user the tasks of users with no linked agent user run as (never "
        "root; `det user link-with-agent-user` links one).",
    )
    tls: TlsSettings = Field(
        default_factory=TlsSettings,
        description="Serve HTTPS with this certificate and key (unset: plain HTTP).",
    )
    login_throttle: LoginThrottleSettings = Field(
        default_factory=LoginThrottleSettings,
        description="Slow down password guessing: 429 with Retry-After after failed logins.",
    )
    authz: AuthzSettings = Field(
        default_factory=AuthzSettings,
        description="Authorization: `type: rbac` turns on roles and permissions (docs/rbac.md).",
    )


class HttpSettings(_Section):
    max_request_body_bytes: int = Field(
        128 * 1024 * 1024,
        ge=1024,
        description="Largest accepted request body; experiment contexts need about 128 MiB.",
    )
    cors_allow_origins: list[str] = Field(default_factory=list, description="CORS origins.")
    proxy_front: bool = Field(
        True,
        description="Serve plain proxied HTTP requests (/proxy/...) outside uvicorn and ASGI "
        "(controlplane/api/proxy_front.py; docs/interactive.md); false sends them through "
        "uvicorn and the ASGI proxy like every other request.",
    )
    proxy_domain: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]{1,5})?$",
        max_length=200,
        description="Domain under which each interactive task gets its own origin, "
        "{task id}.{proxy_domain} (needs a wildcard DNS record, and a wildcard certificate with "
        "TLS, pointing at the master). Unset: localhost for a master opened as localhost or a "
        "loopback address, else none (proxied pages are then served sandboxed on the master's "
        "origin, where JupyterLab does not work in a browser). See docs/interactive.md.",
    )


class LogSettings(_Section):
    level: Literal["debug", "info", "warning", "error"] = Field("info", description="Log level.")


class RetentionPolicySettings(_Section):
    """Determined's master `retention_policy`: how long task logs are kept."""

    log_retention_days: int | None = Field(
        None,
        ge=-1,
        le=36500,
        description="Delete the logs of tasks that ended more than this many days ago "
        "(unset or -1: keep them forever).",
    )
    schedule: str = Field(
        "0 0 * * *",
        max_length=200,
        description="When the retention job runs: a five-field cron expression (UTC).",
    )

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str) -> str:
        try:
            CronTrigger.from_crontab(value, timezone="UTC")
        except ValueError as exc:
            raise ValueError(
                f"retention_policy.schedule {value!r} is not a cron expression of five fields "
                f"(minute hour day month weekday, e.g. '0 0 * * *'): {exc}"
            ) from None
        return value


class WebhookSettings(_Section):
    """Determined's master `webhooks`: how experiment events reach webhooks (docs/webhooks.md)."""

    base_url: str = Field(
        "",
        max_length=2048,
        description="The web UI's address, used for links in Slack messages (unset: no links).",
    )
    signing_key: SecretStr | None = Field(
        None,
        description="Key of the X-Determined-AI-Signature HMAC on every delivery. Unset: a "
        "random key made at start-up (receivers then cannot check signatures).",
    )
    sweep_s: float = Field(
        300.0,
        gt=0,
        le=86400,
        description="How often the master looks for queued webhook events it was not told of "
        "(events are sent as soon as the change that makes them commits; retries when due).",
    )


class MasterSettings(BaseSettings):
    """Everything the master reads at start-up."""

    model_config = SettingsConfigDict(
        env_prefix="DET_", env_nested_delimiter="_", env_nested_max_split=1, extra="forbid"
    )

    config_file: Path | None = Field(
        None, description="Master YAML file (also --config-file / DET_CONFIG_FILE)."
    )
    host: str = Field("0.0.0.0", description="Address to listen on.")
    port: int = Field(8080, ge=1, le=65535, description="HTTP port, 8080 as in Determined.")
    data_dir: Path = Field(DEFAULT_DATA_DIR, description="Where the embedded default keeps data.")
    cluster_name: str = Field("default", description="Shown by `det master info`.")
    cluster_id: str | None = Field(None, description="Stable cluster id; generated when unset.")
    db: DbSettings = Field(default_factory=DbSettings)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    log: LogSettings = Field(default_factory=LogSettings)
    checkpoint_storage: dict[str, Any] | None = Field(
        None,
        description="Default checkpoint storage for experiments that set none "
        "(default: shared_fs under the data directory).",
    )
    task_container_defaults: dict[str, Any] = Field(
        default_factory=dict, description="Defaults merged under every task's config."
    )
    resource_manager: dict[str, Any] = Field(
        default_factory=dict,
        description="Resource manager: scheduler, default pools (docs/schedulers.md).",
    )
    resource_pools: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Resource pools; omitted means one pool named 'default'.",
    )
    scheduler: dict[str, Any] | None = Field(
        None, description="Pre-0.14 format: the scheduler of the single 'default' pool."
    )
    provisioner: dict[str, Any] | None = Field(
        None, description="Pre-0.14 format: the provider of the single 'default' pool."
    )
    scheduling_interval_s: float = Field(
        0.5, gt=0, le=60, description="Longest time between two scheduling passes of a pool."
    )
    launch_error: bool = Field(
        True,
        description="Refuse jobs that ask for more slots than their pool can ever hold.",
    )
    agent_heartbeat_interval_s: float = Field(
        5.0, gt=0, le=300, description="How often agents are asked to send a heartbeat."
    )
    agent_liveness_timeout_s: float = Field(
        20.0,
        gt=0,
        le=600,
        description="An agent silent this long is treated as disconnected (its reconnect wait "
        "starts); must exceed agent_heartbeat_interval_s.",
    )
    provisioner_interval_s: float = Field(
        5.0,
        gt=0,
        le=300,
        description="Longest time between two provisioning ticks of a pool with a provider "
        "(Determined: 5 s); a change in unmet demand starts one at once.",
    )
    notebook_timeout: int | None = Field(
        None, ge=1, le=366 * 86400, description="Seconds idle before a notebook is killed."
    )
    tensorboard_timeout: int = Field(
        300,
        ge=1,
        le=366 * 86400,
        description="Seconds without requests before a TensorBoard "
        "is killed (Determined's default: 300).",
    )
    interactive_idle_check_s: float = Field(
        5.0, gt=0, le=3600, description="How often the master looks for idle interactive tasks."
    )
    rendezvous_timeout_s: float = Field(
        600.0,
        gt=0,
        le=86400,
        description="How long the containers of a multi-container trial wait for each other at "
        "the rendezvous before the allocation is killed (Determined: 10 minutes).",
    )
    retention_policy: RetentionPolicySettings = Field(default_factory=RetentionPolicySettings)
    webhooks: WebhookSettings = Field(default_factory=WebhookSettings)
    checkpoint_gc_interval_s: float = Field(
        30.0,
        gt=0,
        le=86400,
        description="How often the master collects ended experiments' checkpoints and retries "
        "failed deletions (an experiment's end or `det checkpoint delete` starts one at once).",
    )
    _resources: ResourcesConfig | None = PrivateAttr(None)
    _providers: dict[str, ProviderConfig] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _resources_are_valid(self) -> MasterSettings:
        raw = {
            "resource_manager": self.resource_manager or None,
            "resource_pools": self.resource_pools or None,
            "scheduler": self.scheduler,
            "provisioner": self.provisioner,
            # Pools inherit from it what they do not set (the default task Python, `python`).
            "task_container_defaults": self.task_container_defaults or None,
        }
        try:
            self._resources = ResourcesConfig.from_master_config(raw)
            legacy = self.provisioner is not None
            self._providers = parse_pool_providers(self._resources, legacy=legacy)
        except ValidationError as exc:
            raise ValueError("\n".join(format_config_errors(exc))) from None
        return self

    @property
    def resources(self) -> ResourcesConfig:
        """The validated resource manager and pools."""
        assert self._resources is not None
        return self._resources

    @property
    def providers(self) -> dict[str, ProviderConfig]:
        """The validated provider (aws or gcp) of each pool that has one, by pool name."""
        return dict(self._providers)

    @model_validator(mode="after")
    def _liveness_outlasts_heartbeats(self) -> MasterSettings:
        if self.agent_liveness_timeout_s <= self.agent_heartbeat_interval_s:
            raise ValueError(
                f"agent_liveness_timeout_s ({self.agent_liveness_timeout_s:g}) must be greater "
                f"than agent_heartbeat_interval_s ({self.agent_heartbeat_interval_s:g})"
            )
        return self

    @model_validator(mode="after")
    def _no_empty_initial_password(self) -> MasterSettings:
        pw = self.security.initial_user_password
        if (
            pw is not None
            and pw.get_secret_value() == ""
            and not self.security.allow_empty_passwords
        ):
            raise ValueError(
                "security.initial_user_password is empty; empty passwords are not allowed "
                "(set security.allow_empty_passwords: true to permit them)"
            )
        return self

    @field_validator("data_dir")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _YamlSource(settings_cls, init_settings))

    @property
    def database_url(self) -> str:
        if self.db.url:
            return self.db.url
        return f"sqlite+aiosqlite:///{self.data_dir / 'resolute.db'}"

    def prepare_default_checkpoint_dir(self, cluster_id: str = "") -> None:
        """With no checkpoint_storage set, make the embedded default's shared folders writable
        by every task user: 1777, as /tmp. Tasks run as their owners' Unix users, and the
        sticky bit keeps each one's checkpoints from the others. Made here, the first task
        cannot make them its own: host_path, storage_path and, with ``cluster_id``, the
        TensorBoard tree down to ``<cluster id>/tensorboard/experiment``, which the real
        determined package (not our harness) would create 0755. A storage set in the config
        is the operator's to prepare (docs/operations.md)."""
        if self.checkpoint_storage:
            return
        storage = self.default_checkpoint_storage
        host = Path(storage["host_path"])
        folders = [host, host / storage["storage_path"]]
        if cluster_id:
            top = folders[-1] / cluster_id
            folders += [top, top / "tensorboard", top / "tensorboard" / "experiment"]
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
            info = folder.stat()
            if info.st_uid == os.geteuid() and info.st_mode & 0o7777 != 0o1777:
                folder.chmod(0o1777)

    @property
    def default_checkpoint_storage(self) -> dict[str, Any]:
        if self.checkpoint_storage:
            return dict(self.checkpoint_storage)
        return {
            "type": "shared_fs",
            "host_path": str(self.data_dir / "checkpoints"),
            "storage_path": "determined-checkpoint",
        }


class _YamlSource(PydanticBaseSettingsSource):
    """Reads the master YAML named by `config_file` (init kwarg or DET_CONFIG_FILE)."""

    def __init__(self, settings_cls: type[BaseSettings], init: PydanticBaseSettingsSource):
        super().__init__(settings_cls)
        self._init = init

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = self._init().get("config_file") or os.environ.get("DET_CONFIG_FILE")
        if not path:
            return {}
        text = Path(path).read_text()
        data = YAML(typ="safe").load(text) or {}
        if not isinstance(data, dict):
            raise ValueError(f"master config {path}: the top level must be a mapping")
        data.setdefault("config_file", str(path))
        return data


def load_settings(config_file: Path | None = None, **overrides: Any) -> MasterSettings:
    """Build settings from (in order of precedence) overrides, environment, then the YAML file."""
    if config_file is not None:
        overrides["config_file"] = config_file
    return MasterSettings(**overrides)
