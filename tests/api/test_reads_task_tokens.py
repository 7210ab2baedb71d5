"""Task tokens on the experiment data reads (issue 39): a trial's token reports the checkpoint
its own trial used and no other trial's, reads what its owner may read, and may not change a
checkpoint's metadata; a command's token acts as its owner without admin rights."""

from __future__ import annotations

import uuid

from tests.api.test_task_tokens import _world, headers_of
from tests.support.fake_agent import FakeAgent
from tests.support.live_master import StartMaster

INFERENCE = "TRIAL_SOURCE_INFO_TYPE_INFERENCE"


async def test_trial_and_command_tokens_on_the_reads(
    start_master: StartMaster, agents: list[FakeAgent]
) -> None:
    m = await start_master()
    w = await _world(m, agents)
    trial_id = int(w.env(w.trial, "DET_TRIAL_ID"))
    exp_id = w.env(w.trial, "DET_EXPERIMENT_ID")
    other_trial = int(w.env(w.other, "DET_TRIAL_ID"))
    ckpt = str(uuid.uuid4())
    await m.post("/api/v1/checkpoints", {"uuid": ckpt, "resources": {"w": 1},
                                         "training": {"trialId": other_trial}})  # fmt: skip
    trial, command = headers_of(w.trial), headers_of(w.command)

    def source(t: int) -> dict[str, object]:
        info = {"trialId": t, "checkpointUuid": ckpt, "trialSourceInfoType": INFERENCE}
        return {"trialSourceInfo": info}

    r = await m.http.post("/api/v1/trial-source-info", json=source(trial_id), headers=trial)
    assert r.status_code == 200, r.text
    for token in (trial, command):
        r = await m.http.post("/api/v1/trial-source-info", json=source(other_trial), headers=token)
        assert r.status_code == 403, r.text
        body = {"checkpoint": {"uuid": ckpt, "metadata": {"x": 1}}}
        r = await m.http.post(f"/api/v1/checkpoints/{ckpt}/metadata", json=body, headers=token)
        assert r.status_code == 403, r.text
        for url in (
            f"/api/v1/experiments/{exp_id}/file_tree",
            f"/api/v1/experiments/{exp_id}/validation-history",
            f"/api/v1/checkpoints/{ckpt}/metrics",
        ):
            r = await m.http.get(url, headers=token)
            assert r.status_code == 200, (url, r.text)
        preview = {"config": {"searcher": {"name": "single", "metric": "x"}}}
        r = await m.http.post("/api/v1/preview-hp-search", json=preview, headers=token)
        assert r.status_code == 200, r.text
    got = (await m.get(f"/api/v1/checkpoints/{ckpt}"))["checkpoint"]
    assert got["metadata"] == {}
