"""The client's pure parts: who logs in, the master's address, the model directory it sends,
and how checkpoints and trials are ordered (over an in-memory transport)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from harness.experimental import client
from harness.experimental._checkpoint import Checkpoint, _list_checkpoints
from harness.experimental._context import ContextTooLarge, model_definition
from harness.experimental._experiment import Experiment
from tests.harness.fakes import FakeTransport


@pytest.mark.parametrize(
    ("given", "url"),
    [
        ("localhost", "http://localhost:8080"),
        ("https://m.example:443/", "https://m.example:443"),
        ("10.0.0.1:9000/det", "http://10.0.0.1:9000/det"),
    ],
)
def test_canonical_master(given: str, url: str) -> None:
    assert client.canonical_master(given) == url


class TestWhoLogsIn:
    def logins(self, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
        calls: list[tuple[str, str, str]] = []

        def log_in(master: str, user: str, password: str) -> Any:
            calls.append((master, user, password))
            return "session"

        monkeypatch.setattr(client, "_log_in", log_in)
        return calls

    def test_user_and_password(self, monkeypatch: pytest.MonkeyPatch) -> None:
        calls = self.logins(monkeypatch)
        client.make_session("m:1", "alice", "pw", env={"DET_USER_TOKEN": "t"})
        assert calls == [("http://m:1", "alice", "pw")]

    def test_det_user_and_pass(self, monkeypatch: pytest.MonkeyPatch) -> None:
        calls = self.logins(monkeypatch)
        env = {"DET_MASTER": "m:2", "DET_USER": "bob", "DET_PASS": "pw", "DET_USER_TOKEN": "t"}
        client.make_session(env=env)
        assert calls == [("http://m:2", "bob", "pw")]

    def test_a_user_token_then_the_tasks_token(self, monkeypatch: pytest.MonkeyPatch) -> None:
        calls = self.logins(monkeypatch)
        s = client.make_session(env={"DET_MASTER": "m:3", "DET_USER_TOKEN": "ut"})
        assert (s.token, s._user_token) == ("ut", True)
        task = {"DET_MASTER": "m:3", "DET_TASK_ID": "t", "DET_SESSION_TOKEN": "alloc"}
        s = client.make_session(env=task)
        assert (s.token, s._user_token, s.master_url) == ("alloc", False, "http://m:3")
        assert calls == []

    def test_the_default_user(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        calls = self.logins(monkeypatch)
        client.make_session(env={"DET_DEBUG_CONFIG_PATH": str(tmp_path)})
        assert calls == [("http://localhost:8080", "determined", "")]

    def test_the_password_is_hashed_as_determined_does(self) -> None:
        assert client._hashed("") == ""
        assert client._hashed("secret").startswith("f6b1a15b")


def test_the_model_directory_honours_detignore(tmp_path: Path) -> None:
    (tmp_path / "m" / "data").mkdir(parents=True)
    (tmp_path / "m" / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "m" / "train.py").write_text("print(1)\n")
    (tmp_path / "m" / "notes.log").write_text("x")
    (tmp_path / "m" / "keep.log").write_text("x")
    (tmp_path / "m" / "data" / "a.bin").write_bytes(b"1")
    (tmp_path / "m" / "pkg" / "mod.py").write_text("")
    (tmp_path / "m" / "pkg" / "__pycache__" / "mod.pyc").write_bytes(b"")
    (tmp_path / "m" / ".detignore").write_text("# comment\n/data/\n*.log\n!keep.log\n")
    (tmp_path / "extra.txt").write_text("e")
    files = model_definition(tmp_path / "m", [tmp_path / "extra.txt"])
    by_path = {f["path"]: f for f in files}
    assert sorted(by_path) == [
        ".detignore", "extra.txt", "keep.log", "pkg", "pkg/mod.py", "train.py",
    ]  # fmt: skip
    assert by_path["pkg"]["type"] == 53 and by_path["train.py"]["type"] == 48
    assert base64.b64decode(by_path["train.py"]["content"]) == b"print(1)\n"


def test_a_model_directory_over_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("harness.experimental._context.MAX_BYTES", 10)
    (tmp_path / "big").write_bytes(b"x" * 11)
    with pytest.raises(ContextTooLarge, match=r"\.detignore"):
        model_definition(tmp_path)


def _checkpoint(uuid: str, trial: int, steps: int, loss: float | None, searcher: Any) -> Any:
    return {
        "uuid": uuid,
        "state": "STATE_COMPLETED",
        "reportTime": f"2024-01-01T00:00:{steps:02d}Z",
        "resources": {},
        "metadata": {"steps_completed": steps},
        "training": {
            "trialId": trial,
            "experimentConfig": {"searcher": {"metric": "loss", "smaller_is_better": True}},
            "validationMetrics": {"avgMetrics": {"loss": loss}} if loss is not None else {},
            "searcherMetric": searcher,
        },
    }


CHECKPOINTS = [
    _checkpoint("a", 1, 10, 0.5, 0.5),
    _checkpoint("b", 1, 20, 0.2, 0.2),
    _checkpoint("c", 2, 10, 0.3, 0.3),
    _checkpoint("d", 2, 20, None, None),
    {**_checkpoint("e", 2, 30, 0.1, 0.1), "state": "STATE_DELETED"},
]


def _transport() -> FakeTransport:
    def answer(method: str, path: str, body: Any, params: Any) -> Any:
        if path.endswith("/checkpoints"):
            return {"checkpoints": CHECKPOINTS, "pagination": {"total": len(CHECKPOINTS)}}
        if path.startswith("/api/v1/experiments/"):
            return {"experiment": {"id": 1, "state": "STATE_COMPLETED", "config": CONFIG}}
        raise AssertionError(path)

    return FakeTransport(answer)


CONFIG = {"searcher": {"metric": "loss", "smaller_is_better": True}}


def test_checkpoint_ordering() -> None:
    t = _transport()

    def uuids(**kw: Any) -> list[str]:
        args = {"sort_by": None, "order_by": None, "max_results": None, **kw}
        found = _list_checkpoints(t, "/x/checkpoints", CONFIG, **args)  # type: ignore[arg-type]
        return [c.uuid for c in found]

    assert uuids() == ["b", "c", "a", "d"]  # best first; unknown last; deleted left out
    assert uuids(sort_by="loss", order_by=client.OrderBy.DESCENDING) == ["a", "c", "b", "d"]
    assert uuids(sort_by=client.CheckpointSortBy.UUID, order_by=client.OrderBy.ASCENDING) == [
        "a", "b", "c", "d",
    ]  # fmt: skip
    assert uuids(max_results=2) == ["b", "c"]
    with pytest.raises(AssertionError, match="both set"):
        uuids(sort_by="loss")


def test_top_checkpoints_are_the_best_of_each_trial() -> None:
    exp = Experiment(1, _transport())  # type: ignore[arg-type]
    assert [c.uuid for c in exp.top_n_checkpoints(5)] == ["b", "c"]
    assert exp.top_checkpoint().uuid == "b"
    assert exp.top_checkpoint(sort_by="loss", smaller_is_better=False).uuid == "a"


def test_download_refuses_what_cannot_be_downloaded(tmp_path: Path) -> None:
    ckpt = Checkpoint._from_json(_transport(), {**CHECKPOINTS[0], "state": "STATE_ERROR"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="COMPLETED"):
        ckpt.download(str(tmp_path))
    ckpt = Checkpoint._from_json(_transport(), CHECKPOINTS[0])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="does not serve"):
        ckpt.download(str(tmp_path), mode=client.DownloadMode.MASTER)


def test_download_from_shared_fs(tmp_path: Path) -> None:
    host = tmp_path / "shared"
    (host / "a").mkdir(parents=True)
    (host / "a" / "weights.bin").write_bytes(b"w")
    data = json.loads(json.dumps(CHECKPOINTS[0]))
    data["training"]["experimentConfig"]["checkpoint_storage"] = {
        "type": "shared_fs",
        "host_path": str(host),
    }
    ckpt = Checkpoint._from_json(_transport(), data)  # type: ignore[arg-type]
    out = Path(ckpt.download(str(tmp_path / "dl")))
    assert (out / "weights.bin").read_bytes() == b"w"
    assert json.loads((out / "metadata.json").read_text()) == {"steps_completed": 10}


def test_listing_active_experiments_finds_those_shown_queued_or_running() -> None:
    """The master shows an ACTIVE experiment as QUEUED…RUNNING (Determined's enriched state);
    `list_experiments(states=[ACTIVE])` still finds them, as Determined's server-side filter."""
    shown = ["STATE_QUEUED", "STATE_RUNNING", "STATE_PAUSED", "STATE_COMPLETED", "STATE_PULLING"]
    rows = [{"id": i, "state": s, "labels": [], "username": "u"} for i, s in enumerate(shown)]

    def answer(method: str, path: str, body: Any, params: Any) -> Any:
        assert path == "/api/v1/experiments"
        return {"experiments": rows, "pagination": {"total": len(rows)}}

    d = object.__new__(client.Determined)
    d._session = FakeTransport(answer)  # type: ignore[assignment]
    active = d.list_experiments(states=[client.ExperimentState.ACTIVE])
    assert [e.id for e in active] == [0, 1, 4]
    running = d.list_experiments(states=[client.ExperimentState.RUNNING])
    assert [e.id for e in running] == [1]
