"""Keys every provider block has, whatever the cloud (reference §2.9, "Common provider keys").

Nothing here contacts a cloud or a metadata server: where Determined fills a default from the
master's own instance metadata, Resolute uses a documented fallback or asks for the value.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from functools import cache
from importlib import metadata
from typing import Any, ClassVar
from urllib.parse import SplitResult, urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from resource_pools.config_duration import GoDuration
from resource_pools.config_errors import raise_config_error

DETERMINED_AGENT_IMAGE = "determinedai/determined-agent:0.38.1"
"""Determined's default agent image for the release whose API Resolute speaks."""

EC2_MASTER_ALIASES = frozenset({"local-ipv4", "public-ipv4", "local-hostname", "public-hostname"})
GCE_MASTER_ALIASES = frozenset({"internal-ip", "external-ip"})
_DEFAULT_MASTER_PORT = {"http": 8080, "https": 8443}


@cache
def default_agent_install() -> str:
    """The shell command the start-up script runs to install this very Resolute version."""
    try:
        version = metadata.version("resolute")
    except metadata.PackageNotFoundError:
        version = ""
    if not version or "+" in version:  # a local build is not on any index: take the latest
        return "python3 -m pip install resolute"
    return f"python3 -m pip install resolute=={version}"


def check_http_url(value: str, what: str) -> str:
    """Refuse anything but an http(s) URL with a host; returns the value unchanged."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{what} must be an http:// or https:// URL with a host, got {value!r}")
    return value


def _check_master_url(value: str) -> SplitResult:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"the scheme must be http or https, got {value!r}")
    if not parts.hostname:
        raise ValueError(f"no host in {value!r}; write e.g. 'http://10.0.0.5:8080'")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"must have no path, query or fragment, got {value!r}")
    try:
        parts.port  # noqa: B018 - reading it validates it
    except ValueError as exc:
        raise ValueError(f"bad port in {value!r}: {exc}") from None
    return parts


class ProviderConfigBase(BaseModel):
    """The keys shared by `type: aws` and `type: gcp` provider blocks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    master_host_aliases: ClassVar[frozenset[str]] = frozenset()
    """Host names in master_url that stand for an address of the master's own instance."""
    foreign_master_aliases: ClassVar[frozenset[str]] = frozenset()

    master_url: str | None = Field(
        None,
        description="Address the dynamic agents dial: http(s)://host[:port], no path. The host may "
        "be an alias for the master's own address (EC2: local-ipv4, public-ipv4, local-hostname, "
        "public-hostname; GCE: internal-ip, external-ip), looked up when the provisioner starts. "
        "Unset: Determined takes the master's private IP from the metadata server; Resolute "
        "never reads metadata while validating, and the provisioning loop uses the master's own "
        "advertised address instead. Without a port: 8080 (http) or 8443 (https).",
    )
    master_cert_name: str = Field(
        "", description="Host name the agents expect in the master's TLS certificate."
    )
    startup_script: SecretStr = Field(
        SecretStr(""),
        description="Shell script run on the instance before the agent starts; a non-zero exit "
        "stops the set-up. Hidden when the config is printed.",
    )
    container_startup_script: SecretStr = Field(
        SecretStr(""),
        description="Script run inside every task container before the task. Hidden when the "
        "config is printed.",
    )
    agent_docker_image: str = Field(
        DETERMINED_AGENT_IMAGE,
        min_length=1,
        description="Image of the agent container (Determined's key, kept for compatibility): "
        "Resolute's start-up script installs the agent with agent_install instead.",
    )
    agent_docker_network: str = Field(
        "default",
        description="Docker network of the agent and its task containers (Determined's code "
        "default; its docs say 'determined').",
    )
    agent_docker_runtime: str = Field("runc", description="Docker runtime of task containers.")
    agent_reconnect_attempts: int = Field(
        5, ge=0, description="How many times an agent retries a lost master connection."
    )
    agent_reconnect_backoff: int = Field(
        5, ge=0, description="Seconds an agent waits between reconnection attempts."
    )
    agent_config_file_contents: dict[str, Any] | str | None = Field(
        None,
        description="Agent config (a mapping, or raw YAML/JSON text) written to the agent's "
        "agent.yaml on each instance.",
    )
    max_idle_agent_period: GoDuration = Field(
        timedelta(minutes=20),
        description="An agent idle this long is terminated (down to min_instances): a Go "
        "duration ('20m', '1h30m') or seconds; must be > 0.",
    )
    max_agent_starting_period: GoDuration = Field(
        timedelta(minutes=20),
        description="How long a launched instance may take until its agent connects before it "
        "counts as disconnected: a Go duration or seconds; must be > 0.",
    )
    min_instances: int = Field(0, ge=0, description="Instances kept even with no work; >= 0.")
    max_instances: int = Field(
        5, gt=0, description="Most instances at once; > 0 and >= min_instances."
    )
    launch_error_timeout: GoDuration = Field(
        timedelta(0),
        description="After more than launch_error_retries consecutive launch failures, launches "
        "stop and too-large jobs are refused for this long after the last failure. 0 (null, the "
        "default): failures never stop launches.",
    )
    launch_error_retries: int = Field(
        0, ge=0, description="Consecutive launch failures tolerated before launch_error_timeout."
    )
    max_hourly_cost: float | None = Field(
        None,
        ge=0,
        description="Resolute addition: the most this pool's instances may cost together, in USD "
        "per hour, by the offers' prices. The provisioner never plans a launch past it; work "
        "waits with the reason shown. Unset: no budget.",
    )
    spot_fallback_after: GoDuration | None = Field(
        None,
        description="Resolute addition, spot pools: once work has waited this long for spot "
        "capacity, the same instance types may be launched on-demand in this pool (a Go "
        "duration, e.g. '10m'). Unset: never on-demand.",
    )
    capacity_backoff: GoDuration = Field(
        timedelta(minutes=1),
        description="Resolute addition: an offer (instance type x subnet/zone) that answered a "
        "capacity or quota error is not tried again for this long; the wait doubles with each "
        "error in a row, up to capacity_backoff_max.",
    )
    capacity_backoff_max: GoDuration = Field(
        timedelta(minutes=30), description="Resolute addition: the longest capacity backoff."
    )
    fallback_pool: str | None = Field(
        None,
        description="Resolute addition: another pool (typically on-demand) that gets this "
        "pool's waiting work while spot capacity cannot be had. Must name another pool of the "
        "master config.",
    )
    metadata_url: str = Field(
        "",
        description="Resolute addition: base URL of the instance-metadata service that the "
        "dynamic agents' set-up script and spot-interruption watcher read. Default: the cloud's "
        "real address. Used only on dynamic agents, never by the master.",
    )
    agent_install: str = Field(
        default_factory=default_agent_install,
        min_length=1,
        description="Resolute addition: shell command the start-up script runs to install the "
        "agent. Default: pip-install the same Resolute version as the master.",
    )

    @model_validator(mode="before")
    @classmethod
    def _nulls_mean_defaults(cls, data: Any) -> Any:
        """`key: null` (an empty YAML entry) means the default where the default is not null."""
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        return {
            k: v
            for k, v in data.items()
            if not (v is None and k in fields and _default_not_null(fields[k]))
        }

    @field_validator("master_url")
    @classmethod
    def _master_url_shape(cls, value: str | None) -> str | None:
        if value is None:
            return None
        host = _check_master_url(value).hostname
        if host in cls.foreign_master_aliases:
            ours = ", ".join(sorted(cls.master_host_aliases))
            raise ValueError(f"{host!r} is an alias of the other cloud; here use one of {ours}")
        return value

    @field_validator("max_idle_agent_period", "max_agent_starting_period")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be greater than 0, e.g. '20m'")
        return value

    @field_validator("metadata_url")
    @classmethod
    def _metadata_url_shape(cls, value: str) -> str:
        return check_http_url(value, "metadata_url")

    @field_validator("agent_docker_image", "agent_install")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("fallback_pool")
    @classmethod
    def _fallback_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must name a pool (or be left out)")
        return value

    @field_validator("capacity_backoff", "capacity_backoff_max")
    @classmethod
    def _backoff_positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be greater than 0, e.g. '1m'")
        return value

    @model_validator(mode="after")
    def _max_covers_min(self) -> ProviderConfigBase:
        if self.capacity_backoff_max < self.capacity_backoff:
            reason = f"must be >= capacity_backoff ({self.capacity_backoff})"
            raise_config_error(
                type(self).__name__, (("capacity_backoff_max",), reason, self.capacity_backoff_max)
            )
        if self.max_instances < self.min_instances:
            reason = f"must be >= min_instances ({self.min_instances})"
            raise_config_error(
                type(self).__name__, (("max_instances",), reason, self.max_instances)
            )
        return self

    @property
    def master_host_alias(self) -> str | None:
        """The alias master_url's host is (e.g. 'local-ipv4'), or None for a real address."""
        if self.master_url is None:
            return None
        host = urlsplit(self.master_url).hostname
        return host if host in self.master_host_aliases else None

    def resolve_master_url(
        self, *, fallback: str, lookup: Callable[[str], str] | None = None
    ) -> str:
        """master_url with its alias replaced and its port made explicit: 'scheme://host:port'.

        `fallback` is used when master_url is unset (the master's own advertised URL);
        `lookup(alias)` answers an alias from the master's instance metadata. Pure: the caller
        decides whether a metadata service may be asked. Raises ValueError for an alias with no
        lookup.
        """
        parts = _check_master_url(self.master_url or fallback)
        host = parts.hostname or ""
        if self.master_url is not None and host in self.master_host_aliases:
            if lookup is None:
                raise ValueError(
                    f"master_url uses the alias {host!r}, which needs the master's instance "
                    "metadata; give the master's address instead"
                )
            host = lookup(host)
        port = parts.port or _DEFAULT_MASTER_PORT[parts.scheme]
        if ":" in host:  # an IPv6 literal
            host = f"[{host}]"
        return f"{parts.scheme}://{host}:{port}"


def _default_not_null(field: Any) -> bool:
    if field.is_required():
        return False
    if field.default_factory is not None:
        return True
    return field.default is not None
