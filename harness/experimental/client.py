"""Determined 0.38.1's ``determined.experimental.client`` for training and automation code: log in,
create and find experiments, wait for them, list their trials, pick and download checkpoints.

Standard library only: it speaks the master's REST ``/api/v1`` through the harness's
``Session`` (urllib/http.client), as the Core API does. Names, signatures and defaults follow
Determined; administration (users, workspaces, model registry, OAuth) is the ``det`` CLI's.

Who logs in (``login()`` without arguments, or the first call of a module-level function):
``user``/``password`` when given; else ``DET_USER`` + ``DET_PASS``; else ``DET_USER_TOKEN``;
else, inside a task, the task's own token (``DET_SESSION_TOKEN``: it acts as the task's owner);
else the token the ``det`` CLI cached for the master's active user; else Determined's default
user ``determined`` with an empty password. The master is ``master``, else ``DET_MASTER``, else
``DET_MASTER_ADDR``, else ``localhost:8080``.

Ordering and sorting of trials and checkpoints happen here, over all of them, so they mean the
same on every master. A checkpoint downloads straight from its storage (shared_fs, s3, gcs) with
the harness's storage managers; the master serves no checkpoint files (``DownloadMode.MASTER``
is refused with a clear error).
"""

from __future__ import annotations

import enum
import hashlib
import json
import logging
import os
import pathlib
from typing import Any

from harness._session import NO_RETRY, APIError, Session
from harness.experimental._checkpoint import Checkpoint, get_checkpoint_with
from harness.experimental._common import (
    ACTIVE_SHOWN_AS,
    CheckpointOrderBy,
    CheckpointSortBy,
    CheckpointState,
    DownloadMode,
    ExperimentOrderBy,
    ExperimentSortBy,
    ExperimentState,
    OrderBy,
    TrialOrderBy,
    TrialSortBy,
    TrialState,
    _descending,
    _ordered,
    _pages,
)
from harness.experimental._context import model_definition
from harness.experimental._experiment import Experiment
from harness.experimental._trial import TrainingMetrics, Trial, TrialMetrics, ValidationMetrics

logger = logging.getLogger("harness.experimental.client")

PASSWORD_SALT = "GubPEmmotfiK9TMD6Zdw"  # Determined's client-side salt


def canonical_master(address: str) -> str:
    """``scheme://host:port[/path]``: http and port 8080 unless given, as Determined's client."""
    if "://" not in address:
        address = f"http://{address}"
    scheme, rest = address.split("://", 1)
    host, slash, path = rest.partition("/")
    if ":" not in host.rsplit("]", 1)[-1]:
        host = f"{host}:8080"
    return f"{scheme}://{host}{slash}{path}".rstrip("/")


def _hashed(password: str) -> str:
    return hashlib.sha512((PASSWORD_SALT + password).encode()).hexdigest() if password else ""


def _cached_token(master: str, env: Any) -> str | None:
    """The token the det CLI stored for the master's active user (auth.json, version 2)."""
    if env.get("DET_DEBUG_CONFIG_PATH"):
        folder = pathlib.Path(env["DET_DEBUG_CONFIG_PATH"])
    elif env.get("XDG_CONFIG_HOME"):
        folder = pathlib.Path(env["XDG_CONFIG_HOME"]) / "determined"
    else:
        folder = pathlib.Path.home() / ".config" / "determined"
    try:
        store = json.loads((folder / "auth.json").read_text())
        entry = (store.get("masters") or {}).get(master) or {}
        return (entry.get("tokens") or {}).get(entry.get("active_user")) or None
    except (OSError, ValueError, AttributeError):
        return None


def _log_in(master: str, user: str, password: str) -> Session:
    anonymous = Session(master, None, retry=NO_RETRY)
    body = {"username": user, "password": _hashed(password), "isHashed": True}
    answer = anonymous.request("POST", "/api/v1/auth/login", body=body)
    return Session(master, answer["token"], user_token=True)


def make_session(
    master: str | None = None,
    user: str | None = None,
    password: str | None = None,
    env: Any = None,
) -> Session:
    """An authenticated session (see the module's docstring for who logs in)."""
    e = os.environ if env is None else env
    url = canonical_master(
        master or e.get("DET_MASTER") or e.get("DET_MASTER_ADDR") or "localhost:8080"
    )
    if user is not None:
        if password is None and e.get("DET_USER") == user and e.get("DET_PASS") is not None:
            password = e["DET_PASS"]
        return _log_in(url, user, password or "")
    if e.get("DET_USER") and e.get("DET_PASS") is not None:
        return _log_in(url, e["DET_USER"], password if password is not None else e["DET_PASS"])
    if e.get("DET_USER_TOKEN"):
        return Session(url, e["DET_USER_TOKEN"], user_token=True)
    if e.get("DET_SESSION_TOKEN") and e.get("DET_TASK_ID"):
        return Session(url, e["DET_SESSION_TOKEN"])  # the task's token: it acts as its owner
    cached = _cached_token(url, e)
    if cached:
        session = Session(url, cached, user_token=True)
        try:
            session.request("GET", "/api/v1/me", retry=NO_RETRY)
            return session
        except APIError:
            logger.debug("the cached token for %s is no longer valid", url)
    return _log_in(url, "determined", password or "")


class Determined:
    """A client of one master (``cert_path``, ``cert_name`` and ``noverify`` are accepted and
    unused: https masters are verified with the system's certificates)."""

    def __init__(
        self,
        master: str | None = None,
        user: str | None = None,
        password: str | None = None,
        cert_path: str | None = None,
        cert_name: str | None = None,
        noverify: bool = False,
    ) -> None:
        self._session = make_session(master, user, password)

    def logout(self) -> None:
        try:
            if self._session._user_token:
                self._session.request("POST", "/api/v1/auth/logout", retry=NO_RETRY)
        finally:
            self._session.close()

    def create_experiment(
        self,
        config: str | pathlib.Path | dict[str, Any],
        model_dir: str | pathlib.Path | None = None,
        includes: list[str | pathlib.Path] | None = None,
        project_id: int | None = None,
        template: str | None = None,
    ) -> Experiment:
        """Submit an experiment: ``config`` a dict, or the path of a YAML file; ``model_dir``
        the context directory (with its .detignore); ``includes`` extra files or folders."""
        if isinstance(config, dict):
            cfg: Any = config
        else:
            cfg = pathlib.Path(config).read_text(encoding="utf-8")
        body: dict[str, Any] = {
            "config": cfg,
            "modelDefinition": model_definition(model_dir, includes),
            "activate": True,
        }
        if project_id is not None:
            body["projectId"] = project_id
        if template is not None:
            body["template"] = template
        answer = self._session.request("POST", "/api/v1/experiments", body=body)
        exp = Experiment(int(answer["experiment"]["id"]), self._session)
        exp._hydrate(answer["experiment"])
        logger.info("created experiment %d", exp.id)
        return exp

    def get_experiment(self, experiment_id: int) -> Experiment:
        exp = Experiment(int(experiment_id), self._session)
        exp.reload()
        return exp

    def get_trial(self, trial_id: int) -> Trial:
        trial = Trial(int(trial_id), self._session)
        trial.reload()
        return trial

    def get_checkpoint(self, uuid: str) -> Checkpoint:
        return get_checkpoint_with(self._session, uuid)

    def list_experiments(
        self,
        sort_by: ExperimentSortBy | None = None,
        order_by: OrderBy | None = None,
        experiment_ids: list[int] | None = None,
        labels: list[str] | None = None,
        users: list[str] | None = None,
        states: list[ExperimentState] | None = None,
        name: str | None = None,
        project_id: int | None = None,
    ) -> list[Experiment]:
        """Experiments matching every filter given (``labels``: having all of them; ``name``: a
        part of the name), sorted here by ``sort_by`` (ID by default)."""
        wanted_states = {ExperimentState(s).value for s in states or []}
        if ExperimentState.ACTIVE.value in wanted_states:
            # The master shows an ACTIVE experiment by what its trials do (as Determined).
            wanted_states |= {s.value for s in ACTIVE_SHOWN_AS}
        out = []
        for data in _pages(self._session, "/api/v1/experiments", "experiments"):
            if experiment_ids and int(data["id"]) not in set(experiment_ids):
                continue
            if wanted_states and data.get("state") not in wanted_states:
                continue
            if labels and not set(labels) <= set(data.get("labels") or []):
                continue
            if users and data.get("username") not in set(users):
                continue
            if name and name not in (data.get("name") or ""):
                continue
            if project_id is not None and data.get("projectId") != project_id:
                continue
            exp = Experiment(int(data["id"]), self._session)
            exp._hydrate(data)
            out.append(exp)
        field = {
            ExperimentSortBy.ID: "id",
            ExperimentSortBy.NAME: "name",
            ExperimentSortBy.START_TIME: "start_time",
            ExperimentSortBy.END_TIME: "end_time",
            ExperimentSortBy.STATE: "state",
            ExperimentSortBy.PROGRESS: "progress",
            ExperimentSortBy.USER: "username",
            ExperimentSortBy.PROJECT_ID: "project_id",
            ExperimentSortBy.RESOURCE_POOL: "resource_pool",
            ExperimentSortBy.CHECKPOINT_COUNT: "checkpoint_count",
            ExperimentSortBy.CHECKPOINT_SIZE: "checkpoint_size",
            ExperimentSortBy.DESCRIPTION: "description",
            ExperimentSortBy.FORKED_FROM: "forked_from",
        }.get(ExperimentSortBy(sort_by) if sort_by is not None else ExperimentSortBy.ID, "id")

        def key(e: Experiment) -> Any:
            value = getattr(e, field)
            return value.value if isinstance(value, enum.Enum) else value

        return _ordered(out, key, _descending(order_by))


_determined: Determined | None = None


def login(
    master: str | None = None,
    user: str | None = None,
    password: str | None = None,
    cert_path: str | None = None,
    cert_name: str | None = None,
    noverify: bool = False,
) -> Determined:
    """Log in for the module-level functions (which log in with the defaults when not done)."""
    global _determined
    _determined = Determined(master, user, password, cert_path, cert_name, noverify)
    return _determined


def logout() -> None:
    global _determined
    if _determined is not None:
        _determined.logout()
    _determined = None


def _client() -> Determined:
    return _determined if _determined is not None else login()


def create_experiment(
    config: str | pathlib.Path | dict[str, Any],
    model_dir: str | pathlib.Path | None = None,
    includes: list[str | pathlib.Path] | None = None,
    project_id: int | None = None,
    template: str | None = None,
) -> Experiment:
    return _client().create_experiment(config, model_dir, includes, project_id, template)


def get_experiment(experiment_id: int) -> Experiment:
    return _client().get_experiment(experiment_id)


def get_trial(trial_id: int) -> Trial:
    return _client().get_trial(trial_id)


def get_checkpoint(uuid: str) -> Checkpoint:
    return _client().get_checkpoint(uuid)


def list_experiments(
    sort_by: ExperimentSortBy | None = None,
    order_by: OrderBy | None = None,
    experiment_ids: list[int] | None = None,
    labels: list[str] | None = None,
    users: list[str] | None = None,
    states: list[ExperimentState] | None = None,
    name: str | None = None,
    project_id: int | None = None,
) -> list[Experiment]:
    return _client().list_experiments(
        sort_by, order_by, experiment_ids, labels, users, states, name, project_id
    )


__all__ = [
    "Checkpoint",
    "CheckpointOrderBy",
    "CheckpointSortBy",
    "CheckpointState",
    "Determined",
    "DownloadMode",
    "Experiment",
    "ExperimentOrderBy",
    "ExperimentSortBy",
    "ExperimentState",
    "OrderBy",
    "TrainingMetrics",
    "Trial",
    "TrialMetrics",
    "TrialOrderBy",
    "TrialSortBy",
    "TrialState",
    "ValidationMetrics",
    "create_experiment",
    "get_checkpoint",
    "get_experiment",
    "get_trial",
    "list_experiments",
    "login",
    "logout",
]
