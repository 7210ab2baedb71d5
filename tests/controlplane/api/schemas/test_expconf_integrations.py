"""validate_experiment_config: `integrations.webhooks` (Determined's WebhooksConfigV0)."""

from __future__ import annotations

import pytest

from tests.controlplane.api.schemas.expconf_checks import issues, validate

HEAD = """\
name: exp
entrypoint: python3 train.py
searcher:
  name: single
  metric: loss
"""


def test_webhooks_block_is_read() -> None:
    text = HEAD + "integrations:\n  webhooks:\n    webhook_id: [3, 4]\n    webhook_name: [a]\n"
    hooks = validate(text).integrations.webhooks  # type: ignore[union-attr]
    assert hooks is not None
    assert (hooks.webhook_id, hooks.webhook_name, hooks.exclude) == ([3, 4], ["a"], False)


def test_pachyderm_is_kept_as_given() -> None:
    text = HEAD + "integrations:\n  pachyderm:\n    dataset: {repo: r}\n"
    assert validate(text).integrations.pachyderm == {"dataset": {"repo": "r"}}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("block", "where"),
    [
        ("webhooks: {webhook_id: [x]}", "integrations.webhooks.webhook_id"),
        ("webhooks: {webhook_id: [0]}", "integrations.webhooks.webhook_id"),
        ("webhooks: {webhook_name: a}", "integrations.webhooks.webhook_name"),
        ("webhooks: {exclude: 'yes'}", "integrations.webhooks.exclude"),
        ("webhooks: {hook: 1}", "integrations.webhooks"),
        ("slack: {}", "integrations"),
    ],
)
def test_bad_blocks_name_their_key(block: str, where: str) -> None:
    found = issues(HEAD + "integrations:\n  " + block + "\n")
    assert any(path.startswith(where) for path, _line, _msg in found), found
