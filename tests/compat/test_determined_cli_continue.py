"""The real `det` 0.38.1 `experiment continue`, `experiment describe` and `trial describe`
against our master (issue 15): a killed single-trial experiment continues its trial with a
config override; an ended search continues its unfinished trials and refuses a changed
searcher; a running experiment and an unknown id are refused with the master's message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.compat.conftest import PASSWORD, RunningMaster
from tests.compat.test_determined_cli import Det

pytestmark = [pytest.mark.compat, pytest.mark.slow]

ENV = {"DET_USER": "admin", "DET_PASS": PASSWORD}
SINGLE = (
    "name: cont-single\nentrypoint: python3 train.py\nmax_restarts: 1\n"
    "searcher: {name: single, metric: loss}\nresources: {slots_per_trial: 0}\n"
)
GRID = (
    "name: cont-grid\nentrypoint: python3 train.py\n"
    "hyperparameters: {x: {type: categorical, vals: [1, 2, 3]}}\n"
    "searcher: {name: grid, metric: loss, max_concurrent_trials: 3}\n"
    "resources: {slots_per_trial: 0}\n"
)


@pytest.fixture(scope="module")
def det(det_bin: Path, running_master: RunningMaster, tmp_path_factory: pytest.TempPathFactory):
    return Det(det_bin, running_master, tmp_path_factory.mktemp("detcfg"))


class Api:
    def __init__(self, m: RunningMaster, admin: dict[str, str]) -> None:
        self.url, self.headers = m.url, admin

    def get(self, path: str) -> Any:
        r = httpx.get(f"{self.url}{path}", headers=self.headers, timeout=30)
        assert r.status_code == 200, r.text
        return r.json()

    def post(self, path: str, body: Any) -> Any:
        r = httpx.post(f"{self.url}{path}", json=body, headers=self.headers, timeout=30)
        assert r.status_code == 200, r.text
        return r.json()

    def trials(self, exp_id: int) -> list[dict[str, Any]]:
        return sorted(
            self.get(f"/api/v1/experiments/{exp_id}/trials")["trials"], key=lambda t: t["id"]
        )

    def state(self, exp_id: int) -> str:
        return str(self.get(f"/api/v1/experiments/{exp_id}")["experiment"]["state"])


@pytest.fixture
def api(running_master: RunningMaster, admin: dict[str, str]) -> Api:
    return Api(running_master, admin)


def _kill_and_wait(det: Det, api: Api, exp_id: int) -> None:
    det("experiment", "kill", str(exp_id), **ENV)
    # No agent runs these trials, so a kill ends the experiment in the request that asks it.
    assert api.state(exp_id) == "STATE_CANCELED"


def test_continue_a_single_trial_experiment(det: Det, api: Api) -> None:
    exp_id = api.post("/api/v1/experiments", {"config": SINGLE, "activate": False})["experiment"][
        "id"
    ]
    (trial,) = api.trials(exp_id)
    for steps, loss in ((10, 0.5), (20, 0.25)):
        metrics = {"stepsCompleted": steps, "metrics": {"avgMetrics": {"loss": loss}}}
        api.post(
            f"/api/v1/trials/{trial['id']}/metrics", {"group": "validation", "metrics": metrics}
        )

    code, out = det("experiment", "continue", str(exp_id), ok=False, **ENV)
    assert code != 0 and "only an ended experiment can be continued" in out, out

    _kill_and_wait(det, api, exp_id)
    _, out = det("experiment", "continue", str(exp_id), "--config", "max_restarts=4", **ENV)
    assert f"Continued experiment {exp_id}" in out
    body = api.get(f"/api/v1/experiments/{exp_id}")
    assert body["experiment"]["state"] in ("STATE_ACTIVE", "STATE_QUEUED")
    assert body["config"]["max_restarts"] == 4
    (again,) = api.trials(exp_id)
    assert again["id"] == trial["id"] and again["state"] in ("STATE_ACTIVE", "STATE_QUEUED")

    _, out = det("experiment", "describe", str(exp_id), **ENV)
    assert str(trial["id"]) in out and "cont-single" in out, out
    _, out = det("trial", "describe", str(trial["id"]), "--metrics", **ENV)
    assert "0.25" in out and "20" in out, out

    code, out = det("experiment", "continue", "987654", ok=False, **ENV)
    assert code != 0 and "not found" in out, out


def test_continue_an_ended_search(det: Det, api: Api, tmp_path: Path) -> None:
    exp_id = api.post("/api/v1/experiments", {"config": GRID, "activate": True})["experiment"]["id"]
    trials = api.trials(exp_id)
    assert sorted(t["hparams"]["x"] for t in trials) == [1, 2, 3]
    _kill_and_wait(det, api, exp_id)
    assert {t["state"] for t in api.trials(exp_id)} == {"STATE_CANCELED"}

    changed = tmp_path / "changed.yaml"
    changed.write_text(GRID.replace("[1, 2, 3]", "[4, 5]"))
    code, out = det(
        "experiment", "continue", str(exp_id), "--config-file", str(changed), ok=False, **ENV
    )
    assert code != 0 and "hyperparameters cannot change" in out, out
    assert api.state(exp_id) == "STATE_CANCELED"

    _, out = det("experiment", "continue", str(exp_id), **ENV)
    assert f"Continued experiment {exp_id}" in out
    again = api.trials(exp_id)
    assert [t["id"] for t in again] == [t["id"] for t in trials]  # no new trials
    assert {t["state"] for t in again} <= {"STATE_ACTIVE", "STATE_QUEUED"}, again
    _, out = det("experiment", "describe", str(exp_id), **ENV)
    assert all(str(t["id"]) in out for t in trials), out
