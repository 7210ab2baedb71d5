"""Which webhooks an event fires, the bodies they get (Determined's default and Slack formats,
as its e2e tests expect them), the retry schedule and the signature."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain import webhooks as wh
from controlplane.domain.errors import InvalidArgument

T0 = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)
STATE = wh.TriggerSpec(wh.TriggerType.EXPERIMENT_STATE_CHANGE, {"state": "COMPLETED"})
CUSTOM = wh.TriggerSpec(wh.TriggerType.CUSTOM, {})


def hook(
    id: int = 1,
    *,
    name: str = "",
    mode: wh.WebhookMode = wh.WebhookMode.WORKSPACE,
    workspace_id: int | None = None,
    triggers: tuple[wh.TriggerSpec, ...] = (STATE,),
) -> wh.HookView:
    return wh.HookView(
        id, name, "http://127.0.0.1:9/x", wh.WebhookType.DEFAULT, mode, workspace_id, triggers
    )


class TestInScope:
    CASES = [
        # hook, experiment's integrations, experiment's workspace, fires?
        (hook(), None, 1, True),  # global, WORKSPACE mode: every experiment
        (hook(workspace_id=2), None, 1, False),  # another workspace's
        (hook(workspace_id=2), None, 2, True),
        (hook(), {"webhooks": {"exclude": True}}, 1, False),  # the experiment opts out
        (hook(mode=wh.WebhookMode.SPECIFIC, name="s"), None, 1, False),  # not named
        (
            hook(mode=wh.WebhookMode.SPECIFIC, name="s"),
            {"webhooks": {"webhook_name": ["s"]}},
            1,
            True,
        ),
        (
            hook(7, mode=wh.WebhookMode.SPECIFIC, name="s"),
            {"webhooks": {"webhook_id": [7]}},
            1,
            True,
        ),
        (
            hook(7, mode=wh.WebhookMode.SPECIFIC, name="s"),
            {"webhooks": {"webhook_id": [8]}},
            1,
            False,
        ),
        # Determined's test_specific_webhook: named by id, but in another workspace
        (
            hook(7, mode=wh.WebhookMode.SPECIFIC, name="s", workspace_id=1),
            {"webhooks": {"webhook_id": [7]}},
            2,
            False,
        ),
        (
            hook(mode=wh.WebhookMode.SPECIFIC, name=""),
            {"webhooks": {"webhook_name": [""]}},
            1,
            False,
        ),
        (hook(), {"webhooks": "junk"}, 1, True),
    ]

    @pytest.mark.parametrize(("h", "integrations", "ws", "expected"), CASES)
    def test_table(
        self, h: wh.HookView, integrations: dict | None, ws: int, expected: bool
    ) -> None:
        assert wh.in_scope(h, wh.HookConfig.of(integrations), ws) is expected


class TestFiring:
    def test_state_change_fires_only_its_state_and_each_hook_once(self) -> None:
        both = hook(1, triggers=(STATE, wh.TriggerSpec(STATE.trigger_type, {"state": "COMPLETED"})))
        error = hook(2, triggers=(wh.TriggerSpec(STATE.trigger_type, {"state": "ERROR"}),))
        custom = hook(3, triggers=(CUSTOM,))
        kind = wh.TriggerType.EXPERIMENT_STATE_CHANGE
        got = wh.firing(
            [both, error, custom], kind, state="COMPLETED", config=wh.HookConfig(), workspace_id=1
        )
        assert [h.id for h, _ in got] == [1]
        got = wh.firing(
            [both, error, custom],
            wh.TriggerType.CUSTOM,
            state=None,
            config=wh.HookConfig(),
            workspace_id=1,
        )
        assert [h.id for h, _ in got] == [3]


class TestChecks:
    @pytest.mark.parametrize("state", ["COMPLETED", "STATE_COMPLETED", "ERROR", "RUNNING"])
    def test_state_condition_is_kept_without_prefix(self, state: str) -> None:
        spec = wh.check_trigger(wh.TriggerType.EXPERIMENT_STATE_CHANGE, {"state": state})
        assert spec.condition == {"state": state.removeprefix("STATE_")}

    @pytest.mark.parametrize("condition", [None, {}, {"state": "DONE"}, {"state": 3}])
    def test_state_condition_is_required(self, condition: dict | None) -> None:
        with pytest.raises(InvalidArgument, match=r"condition\.state"):
            wh.check_trigger(wh.TriggerType.EXPERIMENT_STATE_CHANGE, condition)

    @pytest.mark.parametrize(
        "kind", [wh.TriggerType.TASK_LOG, wh.TriggerType.METRIC_THRESHOLD_EXCEEDED]
    )
    def test_unfired_trigger_types_are_refused(self, kind: wh.TriggerType) -> None:
        with pytest.raises(InvalidArgument, match="not supported"):
            wh.check_trigger(kind, {"regex": "x"})

    @pytest.mark.parametrize(
        "url",
        ["", "ftp://h/x", "http://", "127.0.0.1:80", "http://h/\x00", "http://h/" + "a" * 3000],
    )
    def test_bad_urls(self, url: str) -> None:
        with pytest.raises(InvalidArgument):
            wh.check_url(url)

    @pytest.mark.parametrize(
        ("value", "expected"),
        [("WEBHOOK_TYPE_SLACK", wh.WebhookType.SLACK), ("DEFAULT", wh.WebhookType.DEFAULT)],
    )
    def test_enum_from_wire(self, value: str, expected: wh.WebhookType) -> None:
        assert wh.enum_from_wire(wh.WebhookType, "WEBHOOK_TYPE_", value, "webhookType") is expected

    @pytest.mark.parametrize("value", [None, 3, "WEBHOOK_TYPE_UNSPECIFIED", "SLACKER"])
    def test_enum_from_wire_refuses(self, value: object) -> None:
        with pytest.raises(InvalidArgument, match="webhookType"):
            wh.enum_from_wire(wh.WebhookType, "WEBHOOK_TYPE_", value, "webhookType")


EXP = wh.ExperimentFacts(
    id=12,
    state="COMPLETED",
    name="noop",
    workspace="Uncategorized",
    project="Uncategorized",
    resource_pool="default",
    slots_per_trial=1,
    start_time=T0,
    end_time=T0 + timedelta(seconds=42),
)


class TestBodies:
    def test_default_state_change(self) -> None:
        event = wh.Event(wh.TriggerType.EXPERIMENT_STATE_CHANGE, EXP, "e-1", T0, state="COMPLETED")
        assert json.loads(wh.body_for(wh.WebhookType.DEFAULT, event)) == {
            "event_id": "e-1",
            "event_type": "EXPERIMENT_STATE_CHANGE",
            "timestamp": int(T0.timestamp()),
            "condition": {"state": "COMPLETED"},
            "event_data": {
                "experiment": {
                    "id": 12,
                    "state": "COMPLETED",
                    "name": "noop",
                    "duration": 42,
                    "resource_pool": "default",
                    "slots_per_trial": 1,
                    "workspace": "Uncategorized",
                    "project": "Uncategorized",
                }
            },
        }

    def test_slack_completed_is_what_determineds_e2e_test_expects(self) -> None:
        event = wh.Event(wh.TriggerType.EXPERIMENT_STATE_CHANGE, EXP, "e-1", T0, state="COMPLETED")
        body = json.loads(wh.body_for(wh.WebhookType.SLACK, event))
        # e2e_tests/tests/cluster/test_webhooks.py::test_slack_webhook
        assert body["blocks"] == [
            {
                "type": "section",
                "text": {"type": "plain_text", "text": "Your experiment completed successfully 🎉"},
            }
        ]
        attachment = body["attachments"][0]
        assert attachment["color"] == "#13B670"
        block = attachment["blocks"][0]
        assert block["text"] == {"type": "mrkdwn", "text": "✅ noop (#12)"}
        assert block["fields"][:2] == [
            {"type": "mrkdwn", "text": "*Status*: Completed"},
            {"type": "mrkdwn", "text": "*Duration*: 0h 0min"},
        ]

    def test_slack_error_links_the_experiment_when_a_base_url_is_set(self) -> None:
        failed = wh.ExperimentFacts(
            **{**EXP.__dict__, "state": "ERROR", "end_time": T0 + timedelta(hours=2, minutes=5)}
        )
        event = wh.Event(wh.TriggerType.EXPERIMENT_STATE_CHANGE, failed, "e", T0, state="ERROR")
        body = json.loads(wh.body_for(wh.WebhookType.SLACK, event, "https://det.example"))
        block = body["attachments"][0]["blocks"][0]
        assert body["attachments"][0]["color"] == "#DD5040"
        assert (
            block["text"]["text"]
            == "❌ <https://det.example/det/experiments/12/overview | noop (#12)>"
        )
        assert block["fields"][1]["text"] == "*Duration*: 2h 5min"

    def test_custom_alert_default_and_slack(self) -> None:
        alert = wh.Alert("loss is NaN", "step 40", "LOG_LEVEL_ERROR", trial_id=3)
        event = wh.Event(wh.TriggerType.CUSTOM, EXP, "e-2", T0, alert=alert)
        body = json.loads(wh.body_for(wh.WebhookType.DEFAULT, event))
        assert body["event_type"] == "CUSTOM" and body["condition"] == {}
        assert body["event_data"]["custom_data"] == {
            "title": "loss is NaN",
            "description": "step 40",
            "level": "LOG_LEVEL_ERROR",
            "trial_id": 3,
        }
        text = json.loads(wh.body_for(wh.WebhookType.SLACK, event))["blocks"][0]["text"]["text"]
        assert "*loss is NaN*" in text and "Trial ID `3`" in text and "(ERROR)" in text

    @pytest.mark.parametrize("kind", list(wh.WebhookType))
    def test_probe_body_is_json(self, kind: wh.WebhookType) -> None:
        assert "test" in wh.probe_body(kind, "e", T0)


class TestRetries:
    def test_schedule_then_give_up(self) -> None:
        waits = [wh.next_attempt(n, T0) for n in range(1, wh.MAX_ATTEMPTS + 1)]
        assert waits[:-1] == [T0 + timedelta(seconds=s) for s in wh.RETRY_WAITS_S]
        assert waits[-1] is None

    @given(st.integers(min_value=1, max_value=wh.MAX_ATTEMPTS - 1))
    def test_retries_only_go_forward(self, attempts: int) -> None:
        at = wh.next_attempt(attempts, T0)
        assert at is not None and at > T0


def test_signature_is_hmac_sha256_of_timestamp_and_body() -> None:
    want = hmac.new(b"k", b"1700000000,{}", hashlib.sha256).hexdigest()
    assert wh.signature(b"k", 1700000000, "{}") == want
