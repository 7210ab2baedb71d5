"""Our ``determined`` (harness/_compat) against the real determined==0.38.1, name by name.

tests/harness/compat/inventory.py lists each module's public names and signatures; it runs once
with the real package's interpreter (.venv-det, with torch from our venv appended to its path)
and once with our venv's Python where only the task library (``pylib``, as the agent builds it)
provides ``determined``. Every name of the real modules must exist in ours with the same kind:
functions and methods with the same parameters (names, kinds, defaults; ours may add
parameters with defaults after Determined's), classes with every public member, enums with the
same members and values, constants with the same value. Ours has no module-level name the real
one lacks. Classes of ours may have members Determined's lack (the harness adds some).

Deliberate differences are in EXCEPTIONS, each with its reason; an exception that no longer
matches a difference fails too, so the list stays true.
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness.compat.conftest import clean_env, det_python

SCRIPT = Path(__file__).with_name("inventory.py")
MODULES = [
    "determined",
    "determined.core",
    "determined.pytorch",
    "determined.launch.torch_distributed",
    "determined.launch.wrap_rank",
    "determined.common.util",
    "determined.experimental",
    "determined.experimental.client",
]

_LEGACY = "Determined's machinery for its legacy trial controllers and local test mode"
_CLIENT_ADMIN = (
    "administration (users, workspaces, projects, OAuth, model registry, resource pools) is "
    "the `det` CLI's and the web UI's: the task-side client covers experiments, trials and "
    "checkpoints"
)
_BUILT_BY_INIT = (
    'constructed by core.init(), never by user code ("always use core.init()"): ours take the '
    "harness's own collaborators"
)
_AMP = (
    "Determined's automatic mixed precision (apex, experimental.use_amp) is not offered: use "
    "torch.autocast with context.wrap_scaler()"
)
_SAMPLERS = (
    "Determined's samplers for custom batch samplers: harness.pytorch.DataLoader shards with "
    "torch's DistributedSampler, and a torch DataLoader with its own sampler is taken as it is"
)
_WRAP_RANK = "the real script's internal helpers: its command line is what is served"
_STREAMS = "metrics of several trials at once: use Trial.iter_metrics() on each"
_CKPT_EDITS = (
    "editing or deleting a checkpoint from the client: the master has no endpoint for it yet "
    "(a task deletes its own with core_context.checkpoint.delete())"
)

# "module:Name" or "module:Class.member" patterns (fnmatch) -> why ours differs.
EXCEPTIONS: dict[str, str] = {
    # determined
    "determined:EnvContext": _LEGACY,
    "determined:ExperimentConfig": _LEGACY,
    "determined:LegacyTrial": _LEGACY,
    "determined:TrialContext": _LEGACY,
    "determined:TrialController": _LEGACY,
    "determined:constants": "internal constants of the real package (ports, paths)",
    "determined:errors": "internal exception types of the real package's controllers",
    "determined:gpu": "GPU inspection of the real package's prep_container",
    "determined:ipc": _LEGACY + " (ZMQ between workers)",
    "determined:load": _LEGACY,
    "determined:tensorboard": "the real package's TensorBoard managers (internal)",
    "determined:util": "internal helpers of the real package",
    "determined:workload": _LEGACY,
    "determined:horovod": "Horovod is not supported: multi-slot training is torch.distributed",
    # determined.core
    "determined.core:ProfilerContext": _BUILT_BY_INIT
    + " (its constructor takes our TrainContext's report, not Determined's _MetricsContext)",
    "determined.core:ExperimentalCoreContext": (
        "reporting which checkpoints a task uses is not implemented: contexts carry "
        "DummyExperimentalCoreContext"
    ),
    "determined.core:*DistributedContext.from_tf_config": (
        "TensorFlow is not supported: the harness trains PyTorch (and any Core API script)"
    ),
    "determined.core:CheckpointContext": _BUILT_BY_INIT,
    "determined.core:SearcherContext": _BUILT_BY_INIT,
    "determined.core:SearcherOperation": _BUILT_BY_INIT,
    "determined.core:TrainContext": _BUILT_BY_INIT,
    # determined.pytorch
    "determined.pytorch:*.autocast_forward_pass": _AMP,
    "determined.pytorch:*.configure_apex_amp": _AMP,
    "determined.pytorch:PyTorchExperimentalContext": _AMP,
    "determined.pytorch:*.set_profiler": (
        "the torch profiler hook of the trainer is not offered: use torch.profiler directly"
    ),
    "determined.pytorch:PyTorchTrial.trial_controller_class": _LEGACY,
    "determined.pytorch:adapt_batch_sampler": _SAMPLERS,
    "determined.pytorch:samplers": _SAMPLERS,
    # determined.launch.wrap_rank: the command line is served, not the script's helpers
    "determined.launch.wrap_rank:constants": _WRAP_RANK,
    "determined.launch.wrap_rank:det": _WRAP_RANK,
    "determined.launch.wrap_rank:forward_stream": _WRAP_RANK,
    "determined.launch.wrap_rank:lineend": _WRAP_RANK,
    "determined.launch.wrap_rank:read_newlines_or_carriage_returns": _WRAP_RANK,
    "determined.launch.wrap_rank:run_all": _WRAP_RANK,
    # determined.launch.torch_distributed
    "determined.launch.torch_distributed:create_*": (
        "the real launcher's command builders (pid_server, log redirection); ours builds its "
        "own torch.distributed.run command"
    ),
    "determined.launch.torch_distributed:det": "the real module's own `import determined`",
    "determined.launch.torch_distributed:logger": "a module logger",
    # determined.common.util: only the metric groups are served
    "determined.common.util:[a-z]*": "internal helpers of the real package, not served",
    # determined.experimental and its client
    "determined.experimental*:*Workspace*": _CLIENT_ADMIN,
    "determined.experimental*:*Model*": _CLIENT_ADMIN,
    "determined.experimental*:*User*": _CLIENT_ADMIN,
    "determined.experimental*:*user*": _CLIENT_ADMIN,
    "determined.experimental*:*oauth*": _CLIENT_ADMIN,
    "determined.experimental*:Oauth2ScimClient": _CLIENT_ADMIN,
    "determined.experimental*:Project": _CLIENT_ADMIN,
    "determined.experimental*:ResourcePool": _CLIENT_ADMIN,
    "determined.experimental*:*model*": _CLIENT_ADMIN,
    "determined.experimental*:*_workspace*": _CLIENT_ADMIN,
    "determined.experimental*:*whoami": _CLIENT_ADMIN,
    "determined.experimental*:get_session_username": _CLIENT_ADMIN,
    "determined.experimental*:Experiment.move_to_project": _CLIENT_ADMIN,
    "determined.experimental*:*stream_trials_*": _STREAMS,
    "determined.experimental*:*iter_trials_metrics": _STREAMS,
    "determined.experimental*:*pachyderm*": "Pachyderm integration is not offered",
    "determined.experimental*:Checkpoint.*_metadata": _CKPT_EDITS,
    "determined.experimental*:Checkpoint.delete": _CKPT_EDITS,
    "determined.experimental*:Checkpoint.remove_files": _CKPT_EDITS,
    "determined.experimental*:Checkpoint.get_metrics": (
        "the master has no per-checkpoint metrics endpoint; the checkpoint's `training` has "
        "the metrics it was saved with"
    ),
    "determined.experimental*:Experiment.delete_tensorboard_files": (
        "the master has no endpoint for deleting an experiment's TensorBoard files"
    ),
    "determined.experimental*:ExperimentSortBy": (
        "Determined's values are objects of its generated bindings; ours are the wire strings "
        "they stand for (same member names)"
    ),
    "determined.experimental:test_one_batch": _LEGACY,
    "determined.experimental:checkpoint": "the real package's module, not a public name",
    "determined.experimental:metrics": "the real package's module, not a public name",
    "determined.experimental*:ExperimentReference": "deprecated alias of Experiment",
    "determined.experimental*:TrialReference": "deprecated alias of Trial",
    "determined.experimental*:logger": "a module logger",
}


def _inventory(python: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    out = subprocess.run(
        [str(python), str(SCRIPT), *args, *MODULES],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=SCRIPT.parent,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def inventories(pylib: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    real_python = det_python()
    torch_site = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
    real = _inventory(real_python, clean_env(), "--append-path", str(torch_site))
    ours = _inventory(Path(sys.executable), clean_env(PYTHONPATH=str(pylib)))
    return real, ours


def _params_compatible(theirs: Any, ours: Any) -> bool:
    """Determined's parameters in order, with their names, kinds and defaults (ours may give a
    default where Determined's has none); ours may add some with defaults (or *args/**kwargs)
    at the end: a call written for Determined binds the same way."""
    if not isinstance(theirs, list) or not isinstance(ours, list):
        return theirs == ours
    if len(ours) < len(theirs):
        return False
    for (name, kind, default), (o_name, o_kind, o_default) in zip(theirs, ours):  # noqa: B905
        if (name, kind) != (o_name, o_kind) or default not in (None, o_default):
            return False
    extra = ours[len(theirs) :]
    return all(d is not None or k in ("VAR_POSITIONAL", "VAR_KEYWORD") for _, k, d in extra)


def _differences(theirs: dict[str, Any], ours: dict[str, Any] | None) -> list[str]:
    """Why ``ours`` cannot stand in for ``theirs`` (empty when it can)."""
    if ours is None:
        return ["missing"]
    if theirs["kind"] != ours["kind"]:
        return [f"is a {ours['kind']}, Determined's is a {theirs['kind']}"]
    kind = theirs["kind"]
    if kind in ("function", "method", "classmethod", "staticmethod"):
        if not _params_compatible(theirs["params"], ours["params"]):
            return [f"parameters {ours['params']} != Determined's {theirs['params']}"]
    elif kind == "enum":
        if theirs["members"] != ours["members"]:
            return [f"members {ours['members']} != Determined's {theirs['members']}"]
    elif kind == "value":
        if theirs != ours:
            return [f"value {ours} != Determined's {theirs}"]
    elif kind in ("class", "exception") and "init" in theirs:  # not a class nested in a class
        out = []
        if not _params_compatible(theirs["init"], ours["init"]):
            out.append(f"constructor {ours['init']} != Determined's {theirs['init']}")
        for name, member in theirs["members"].items():
            out += [f".{name}: {d}" for d in _differences(member, ours["members"].get(name))]
        return out
    return []


def _problems(real: dict[str, Any], ours: dict[str, Any]) -> dict[str, str]:
    """``module:name`` (or ``module:Class.member``) -> what is wrong with ours."""
    problems: dict[str, str] = {}
    for module in MODULES:
        assert "error" not in real[module], (module, real[module])
        if "error" in ours[module]:
            problems[f"{module}:*"] = ours[module]["error"]
            continue
        theirs_names, ours_names = real[module], ours[module]
        for name, theirs in theirs_names.items():
            for diff in _differences(theirs, ours_names.get(name)):
                member, _, what = diff.partition(": ") if diff.startswith(".") else ("", "", diff)
                problems[f"{module}:{name}{member}"] = what
        for name in set(ours_names) - set(theirs_names):
            problems[f"{module}:{name}"] = "ours only: Determined's module has no such name"
    return problems


def _excepted(key: str) -> bool:
    return any(fnmatch.fnmatchcase(key, pattern) for pattern in EXCEPTIONS)


def test_every_name_of_determined_is_served_with_its_signature(
    inventories: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    problems = _problems(*inventories)
    unexplained = {k: v for k, v in sorted(problems.items()) if not _excepted(k)}
    assert unexplained == {}


def test_every_exception_is_still_needed(
    inventories: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    problems = _problems(*inventories)
    stale = [p for p in EXCEPTIONS if not any(fnmatch.fnmatchcase(k, p) for k in problems)]
    assert stale == []


def test_the_inventory_sees_names_and_signatures() -> None:
    """The comparison itself: a missing member, a changed default, an extra name."""
    theirs = {
        "f": {"kind": "function", "params": [["a", "POSITIONAL_OR_KEYWORD", None]]},
        "C": {
            "kind": "class",
            "init": [],
            "members": {
                "m": {"kind": "method", "params": [["self", "POSITIONAL_OR_KEYWORD", None]]}
            },
        },
    }
    ours = {
        "f": {
            "kind": "function",
            "params": [["a", "POSITIONAL_OR_KEYWORD", None], ["b", "KEYWORD_ONLY", "1"]],
        },
        "C": {"kind": "class", "init": [], "members": {}},
        "g": {"kind": "function", "params": []},
    }
    real = {m: {} for m in MODULES} | {"determined": theirs}
    mine = {m: {} for m in MODULES} | {"determined": ours}
    assert _problems(real, mine) == {
        "determined:C.m": "missing",
        "determined:g": "ours only: Determined's module has no such name",
    }
    ours["f"]["params"][1][2] = None  # an added parameter without a default breaks calls
    assert "determined:f" in _problems(real, mine)
