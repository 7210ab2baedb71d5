"""Webhooks, pure: which webhooks an event fires, the bodies Determined sends (default and Slack
formats), the retry schedule and the request signature.

Semantics are Determined 0.38's (master/internal/webhooks): a webhook is global (no workspace;
an admin's) or belongs to one workspace; mode WORKSPACE fires for every experiment in its scope,
mode SPECIFIC only for experiments whose config names it (`integrations.webhooks.webhook_id` or
`webhook_name`); an experiment with `integrations.webhooks.exclude: true` fires none.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, TypeVar
from urllib.parse import urlsplit

from controlplane.domain.errors import InvalidArgument


class TriggerType(StrEnum):
    EXPERIMENT_STATE_CHANGE = "EXPERIMENT_STATE_CHANGE"
    METRIC_THRESHOLD_EXCEEDED = "METRIC_THRESHOLD_EXCEEDED"
    TASK_LOG = "TASK_LOG"
    CUSTOM = "CUSTOM"

    @property
    def wire(self) -> str:
        return f"TRIGGER_TYPE_{self.value}"


class WebhookType(StrEnum):
    DEFAULT = "DEFAULT"
    SLACK = "SLACK"

    @property
    def wire(self) -> str:
        return f"WEBHOOK_TYPE_{self.value}"


class WebhookMode(StrEnum):
    WORKSPACE = "WORKSPACE"
    SPECIFIC = "SPECIFIC"

    @property
    def wire(self) -> str:
        return f"WEBHOOK_MODE_{self.value}"


# What this master fires. TASK_LOG (log-pattern regexes) and METRIC_THRESHOLD_EXCEEDED are
# refused at creation rather than stored and never fired.
FIRED = frozenset({TriggerType.EXPERIMENT_STATE_CHANGE, TriggerType.CUSTOM})

# Experiment states a state-change trigger may name (Determined's experimentv1State without
# the STATE_ prefix; the running states are the ones derived from allocations).
STATES = frozenset(
    {
        "ACTIVE",
        "PAUSED",
        "STOPPING_COMPLETED",
        "STOPPING_CANCELED",
        "STOPPING_ERROR",
        "STOPPING_KILLED",
        "COMPLETED",
        "CANCELED",
        "ERROR",
        "DELETED",
        "QUEUED",
        "PULLING",
        "STARTING",
        "RUNNING",
    }
)

MAX_URL_CHARS = 2048
MAX_NAME_CHARS = 255
MAX_TRIGGERS = 32
# Delivery: an answer other than 2xx (or none) is retried after these waits, then given up.
RETRY_WAITS_S = (2.0, 10.0, 60.0, 300.0)
MAX_ATTEMPTS = len(RETRY_WAITS_S) + 1
SIGNATURE_HEADER = "X-Determined-AI-Signature"
TIMESTAMP_HEADER = "X-Determined-AI-Signature-Timestamp"


E = TypeVar("E", bound=StrEnum)


def enum_from_wire(kind: type[E], prefix: str, value: object, what: str) -> E:
    """`WEBHOOK_TYPE_SLACK` (or `SLACK`) -> WebhookType.SLACK; unknown or unspecified refused."""
    if isinstance(value, str):
        name = value.removeprefix(prefix)
        if name in kind.__members__:
            return kind[name]
    choices = ", ".join(f"{prefix}{m}" for m in kind.__members__)
    raise InvalidArgument(f"{what} must be one of {choices}, got {str(value)[:80]!r}")


@dataclass(frozen=True)
class TriggerSpec:
    trigger_type: TriggerType
    condition: dict[str, Any]
    id: int = 0  # 0 until stored


def check_url(url: str) -> str:
    if not url or len(url) > MAX_URL_CHARS or "\x00" in url:
        raise InvalidArgument(f"a webhook's url must be 1-{MAX_URL_CHARS} characters, no NUL")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidArgument(f"a webhook's url must be an http(s) URL with a host, got {url!r}")
    return url


def check_name(name: str) -> str:
    if len(name) > MAX_NAME_CHARS or "\x00" in name:
        raise InvalidArgument(f"a webhook's name must be at most {MAX_NAME_CHARS} characters")
    return name


def check_trigger(trigger_type: TriggerType, condition: Mapping[str, Any] | None) -> TriggerSpec:
    """A trigger as stored, or why it is refused."""
    if trigger_type not in FIRED:
        raise InvalidArgument(
            f"trigger type {trigger_type.wire} is not supported by this master"
            f" (supported: {', '.join(sorted(t.wire for t in FIRED))})"
        )
    cond = dict(condition or {})
    if trigger_type is TriggerType.EXPERIMENT_STATE_CHANGE:
        state = cond.get("state")
        if isinstance(state, str):
            state = state.removeprefix("STATE_")
        if state not in STATES:
            raise InvalidArgument(
                "an EXPERIMENT_STATE_CHANGE trigger needs condition.state, one of "
                + ", ".join(sorted(STATES))
            )
        return TriggerSpec(trigger_type, {"state": state})
    return TriggerSpec(trigger_type, {})


@dataclass(frozen=True)
class HookConfig:
    """An experiment's `integrations.webhooks`."""

    webhook_ids: tuple[int, ...] = ()
    webhook_names: tuple[str, ...] = ()
    exclude: bool = False

    @classmethod
    def of(cls, integrations: Mapping[str, Any] | None) -> HookConfig:
        hooks = (integrations or {}).get("webhooks") or {}
        if not isinstance(hooks, Mapping):
            return cls()
        ids = hooks.get("webhook_id") or ()
        names = hooks.get("webhook_name") or ()
        return cls(
            webhook_ids=tuple(i for i in ids if isinstance(i, int)),
            webhook_names=tuple(n for n in names if isinstance(n, str)),
            exclude=bool(hooks.get("exclude", False)),
        )


@dataclass(frozen=True)
class HookView:
    id: int
    name: str
    url: str
    webhook_type: WebhookType
    mode: WebhookMode
    workspace_id: int | None
    triggers: tuple[TriggerSpec, ...] = ()


def in_scope(hook: HookView, config: HookConfig, workspace_id: int) -> bool:
    """Whether the webhook applies to an experiment of `workspace_id` with this config."""
    if config.exclude:
        return False
    if hook.workspace_id is not None and hook.workspace_id != workspace_id:
        return False
    if hook.mode is WebhookMode.SPECIFIC:
        return hook.id in config.webhook_ids or (
            bool(hook.name) and hook.name in config.webhook_names
        )
    return True


def fires(trigger: TriggerSpec, kind: TriggerType, state: str | None) -> bool:
    if trigger.trigger_type is not kind:
        return False
    if kind is TriggerType.EXPERIMENT_STATE_CHANGE:
        return trigger.condition.get("state") == state
    return True


def firing(
    hooks: Iterable[HookView],
    kind: TriggerType,
    *,
    state: str | None,
    config: HookConfig,
    workspace_id: int,
) -> list[tuple[HookView, TriggerSpec]]:
    """Each webhook the event fires, once (with the first of its triggers that matches)."""
    out: list[tuple[HookView, TriggerSpec]] = []
    for hook in hooks:
        if not in_scope(hook, config, workspace_id):
            continue
        for trigger in hook.triggers:
            if fires(trigger, kind, state):
                out.append((hook, trigger))
                break
    return out


@dataclass(frozen=True)
class ExperimentFacts:
    """What a payload says about the experiment."""

    id: int
    state: str
    name: str
    workspace: str
    project: str
    resource_pool: str
    slots_per_trial: int
    start_time: datetime
    end_time: datetime | None
    workspace_id: int = 0
    project_id: int = 0

    def duration_s(self) -> int:
        return int((self.end_time - self.start_time).total_seconds()) if self.end_time else 0


@dataclass(frozen=True)
class Alert:
    title: str
    description: str
    level: str  # LOG_LEVEL_INFO, …
    trial_id: int | None = None


@dataclass(frozen=True)
class Event:
    kind: TriggerType
    experiment: ExperimentFacts
    event_id: str  # a UUID, Determined's event_id
    at: datetime
    state: str | None = None
    alert: Alert | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _experiment_json(exp: ExperimentFacts) -> dict[str, Any]:
    return {
        "id": exp.id,
        "state": exp.state,
        "name": exp.name,
        "duration": exp.duration_s(),
        "resource_pool": exp.resource_pool,
        "slots_per_trial": exp.slots_per_trial,
        "workspace": exp.workspace,
        "project": exp.project,
    }


def _default_body(event: Event) -> dict[str, Any]:
    data: dict[str, Any] = {"experiment": _experiment_json(event.experiment)}
    condition: dict[str, Any] = {}
    if event.kind is TriggerType.EXPERIMENT_STATE_CHANGE:
        condition["state"] = event.state
    if event.alert is not None:
        data["custom_data"] = {
            "title": event.alert.title,
            "description": event.alert.description,
            "level": event.alert.level,
            "trial_id": event.alert.trial_id,
        }
    return {
        "event_id": event.event_id,
        "event_type": event.kind.value,
        "timestamp": int(event.at.timestamp()),
        "condition": condition,
        "event_data": data,
    }


def _slack_field(text: str, kind: str = "mrkdwn") -> dict[str, str]:
    return {"type": kind, "text": text}


def _slack_state_body(exp: ExperimentFacts, base_url: str) -> dict[str, Any]:
    done = exp.state == "COMPLETED"
    status = (
        "Your experiment completed successfully 🎉"
        if done
        else ("Your experiment has stopped with errors")
    )
    mark = "✅" if done else "❌"
    title = f"{exp.name} (#{exp.id})"
    link = (
        f"{mark} <{base_url}/det/experiments/{exp.id}/overview | {title}>"
        if base_url
        else (f"{mark} {title}")
    )
    hours, rest = divmod(exp.duration_s(), 3600)
    fields = [
        _slack_field(f"*Status*: {'Completed' if done else 'Errored'}"),
        _slack_field(f"*Duration*: {hours}h {rest // 60}min"),
    ]
    if exp.workspace:
        fields.append(_slack_field(f"*Workspace*: {exp.workspace}"))
    if exp.project:
        fields.append(_slack_field(f"*Project*: {exp.project}"))
    return {
        "blocks": [{"type": "section", "text": _slack_field(status, "plain_text")}],
        "attachments": [
            {
                "color": "#13B670" if done else "#DD5040",
                "blocks": [{"type": "section", "text": _slack_field(link), "fields": fields}],
            }
        ],
    }


def _slack_alert_body(exp: ExperimentFacts, alert: Alert, base_url: str) -> dict[str, Any]:
    where = f"Experiment ID `{exp.id}`" + (
        f", Trial ID `{alert.trial_id}`" if alert.trial_id is not None else ""
    )
    text = (
        f"*{alert.title}*\n{alert.description}\n{where} ({alert.level.removeprefix('LOG_LEVEL_')})"
    )
    if base_url:
        text += f"\n<{base_url}/det/experiments/{exp.id}/overview | View the experiment>"
    return {"blocks": [{"type": "section", "text": _slack_field(text)}]}


def body_for(hook_type: WebhookType, event: Event, base_url: str = "") -> str:
    """The JSON Determined posts for this event to a webhook of `hook_type`."""
    if hook_type is WebhookType.SLACK:
        if event.alert is not None:
            payload = _slack_alert_body(event.experiment, event.alert, base_url)
        else:
            payload = _slack_state_body(event.experiment, base_url)
    else:
        payload = _default_body(event)
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def probe_body(hook_type: WebhookType, event_id: str, at: datetime) -> str:
    """TestWebhook's body: a Slack message "test", or a default event whose data is "test"."""
    if hook_type is WebhookType.SLACK:
        payload: dict[str, Any] = {
            "blocks": [{"type": "section", "text": _slack_field("test", "plain_text")}]
        }
    else:
        payload = {
            "event_id": event_id,
            "event_type": TriggerType.EXPERIMENT_STATE_CHANGE.value,
            "timestamp": int(at.timestamp()),
            "condition": {"state": "COMPLETED"},
            "event_data": {"data": "test"},
        }
    return json.dumps(payload, separators=(",", ":"))


def next_attempt(attempts_made: int, now: datetime) -> datetime | None:
    """When to try again after `attempts_made` failed attempts; None: give up."""
    if attempts_made >= MAX_ATTEMPTS:
        return None
    return now + timedelta(seconds=RETRY_WAITS_S[attempts_made - 1])


def signature(key: bytes, timestamp: int, body: str) -> str:
    """HMAC-SHA256 of "<timestamp>,<body>" under the master's signing key, hex."""
    return hmac.new(key, f"{timestamp},{body}".encode(), hashlib.sha256).hexdigest()
