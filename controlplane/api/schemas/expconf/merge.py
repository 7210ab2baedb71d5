"""Determined's template merge (reference §5.7) on raw config dicts.

`merge_configs(user, template)` lays the user's config over the template:
- the user wins on every conflict; a key the user leaves unset (absent or null) takes the
  template's value;
- mappings merge key by key, recursively;
- lists are replaced whole, except:
  - `bind_mounts` and `resources.devices`: the user's entries, then the template's entries whose
    container_path does not clash with a user entry;
  - `environment.environment_variables`: the template's entries, then the user's (so the user's
    win when applied in order), per device type when either side uses the {cpu, cuda, rocm}
    form;
- `hyperparameters`: nested maps merge recursively, but a leaf hyperparameter (a mapping with
  `type`, or a bare value) is taken whole from the user;
- union blocks `searcher` (keyed on `name`) and `checkpoint_storage` (keyed on `type`): when both
  sides name a different kind the user's block wins whole, otherwise fields merge;
- `environment.image`: a string on one side and a map on the other merge as maps.

The inputs are never modified. The same function merges task_container_defaults under a config.

`with_cluster_checkpoint_storage(config, cluster)` lays an experiment's `checkpoint_storage` over
the master's, as Determined's `UnionMerge` does on experiment creation: the GC keys
(`save_experiment_best`, `save_trial_best`, `save_trial_latest`) merge whatever the types; the
storage itself merges key by key when the experiment names no `type` or the cluster's type, and is
the experiment's alone when it names another type.
"""

from __future__ import annotations

import copy
from typing import Any

from .models_environment import DEVICE_TYPES

Path = tuple[str, ...]

_MOUNT_LISTS: frozenset[Path] = frozenset({("bind_mounts",), ("resources", "devices")})
_ENV_VARS: Path = ("environment", "environment_variables")
_IMAGE: Path = ("environment", "image")
_HYPERPARAMETERS: Path = ("hyperparameters",)
_UNION_KEYS: dict[Path, str] = {("searcher",): "name", ("checkpoint_storage",): "type"}


def merge_configs(user: dict[str, Any], template: dict[str, Any]) -> dict[str, Any]:
    """Merge the user's raw config over a template's raw config (both left untouched)."""
    if not isinstance(user, dict) or not isinstance(template, dict):
        raise TypeError("merge_configs expects two mappings")
    merged = _merge(user, template, ())
    assert isinstance(merged, dict)
    return merged


def _merge(user: Any, template: Any, path: Path) -> Any:
    if user is None:
        return copy.deepcopy(template)
    if template is None:
        return copy.deepcopy(user)
    if path in _MOUNT_LISTS:
        return _append_mounts(user, template)
    if path == _ENV_VARS:
        return _concat_env_vars(user, template)
    if path == _IMAGE:
        return _merge_image(user, template)
    if not (isinstance(user, dict) and isinstance(template, dict)):
        return copy.deepcopy(user)
    if path == _HYPERPARAMETERS:
        return _merge_maps(user, template, _merge_hyperparameter)
    union_key = _UNION_KEYS.get(path)
    if union_key is not None:
        mine, theirs = user.get(union_key), template.get(union_key)
        if mine is not None and theirs is not None and mine != theirs:
            return copy.deepcopy(user)
    return _merge_maps(user, template, lambda key, a, b: _merge(a, b, (*path, key)))


def _merge_maps(user: dict[str, Any], template: dict[str, Any], merge_value: Any) -> dict:
    out: dict[str, Any] = {}
    for key, value in user.items():
        if key in template:
            out[key] = merge_value(key, value, template[key])
        else:
            out[key] = copy.deepcopy(value)
    for key, value in template.items():
        if key not in user:
            out[key] = copy.deepcopy(value)
    return out


def _container_path(entry: Any) -> str | None:
    if isinstance(entry, dict):
        found = entry.get("container_path")
        return found if isinstance(found, str) else None
    if isinstance(entry, str):
        parts = entry.split(":")
        return parts[1] if len(parts) >= 2 else None
    return None


def _append_mounts(user: Any, template: Any) -> Any:
    if not (isinstance(user, list) and isinstance(template, list)):
        return copy.deepcopy(user)
    taken = {_container_path(entry) for entry in user} - {None}
    kept = [entry for entry in template if _container_path(entry) not in taken]
    return copy.deepcopy(user) + copy.deepcopy(kept)


def _env_map(value: Any) -> dict[str, Any] | None:
    """Per-device-type form of environment_variables (None when malformed)."""
    if isinstance(value, list):
        return {kind: list(value) for kind in DEVICE_TYPES}
    if not isinstance(value, dict):
        return None
    out = {key: item for key, item in value.items() if key != "gpu"}
    legacy = value.get("gpu")
    if legacy is not None:
        current = out.get("cuda")
        if isinstance(legacy, list) and isinstance(current, list):
            out["cuda"] = [*legacy, *current]
        elif current is None:
            out["cuda"] = legacy
    return out


def _concat_env_vars(user: Any, template: Any) -> Any:
    if isinstance(user, list) and isinstance(template, list):
        return copy.deepcopy(template) + copy.deepcopy(user)
    mine, theirs = _env_map(user), _env_map(template)
    if mine is None or theirs is None:
        return copy.deepcopy(user)
    out: dict[str, Any] = {}
    for key in [*theirs, *(key for key in mine if key not in theirs)]:
        a, b = mine.get(key), theirs.get(key)
        if isinstance(a, list) and isinstance(b, list):
            out[key] = copy.deepcopy(b) + copy.deepcopy(a)
        else:
            out[key] = copy.deepcopy(b if a is None else a)
    return out


def _image_map(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        return dict.fromkeys(DEVICE_TYPES, value)
    if not isinstance(value, dict):
        return None
    out = {key: item for key, item in value.items() if key != "gpu"}
    if value.get("gpu") is not None and out.get("cuda") is None:
        out["cuda"] = value["gpu"]
    return out


def _merge_image(user: Any, template: Any) -> Any:
    if isinstance(user, str):
        return user
    mine, theirs = _image_map(user), _image_map(template)
    if mine is None or theirs is None:
        return copy.deepcopy(user)
    return _merge_maps(mine, theirs, lambda _key, a, b: copy.deepcopy(b if a is None else a))


def _is_nested_hyperparameters(value: Any) -> bool:
    return isinstance(value, dict) and "type" not in value


def _merge_hyperparameters(user: Any, template: Any) -> Any:
    if not (_is_nested_hyperparameters(user) and _is_nested_hyperparameters(template)):
        return copy.deepcopy(user)
    return _merge_maps(user, template, _merge_hyperparameter)


def _merge_hyperparameter(_key: str, user: Any, template: Any) -> Any:
    if user is None:
        return copy.deepcopy(template)
    return _merge_hyperparameters(user, template)


_STORAGE_GC_KEYS = ("save_experiment_best", "save_trial_best", "save_trial_latest")


def merge_checkpoint_storage(user: Any, cluster: Any) -> Any:
    """An experiment's checkpoint_storage block over the cluster's (both left untouched).

    Determined's UnionMerge: the GC keys are common to every type and always merge (the user's
    set value wins); the type's own keys come from the cluster only when the user names no type
    or the same one. Anything but two mappings: the user's value, else the cluster's.
    """
    if user is None:
        return copy.deepcopy(cluster)
    if not (isinstance(user, dict) and isinstance(cluster, dict)):
        return copy.deepcopy(user)
    mine, theirs = user.get("type"), cluster.get("type")
    if mine is None or mine == theirs:
        return _merge_maps(user, cluster, lambda _key, a, b: copy.deepcopy(b if a is None else a))
    out = copy.deepcopy(user)
    for key in _STORAGE_GC_KEYS:
        if out.get(key) is None and cluster.get(key) is not None:
            out[key] = cluster[key]
    return out


def with_cluster_checkpoint_storage(
    config: dict[str, Any], cluster: dict[str, Any] | None
) -> dict[str, Any]:
    """The raw config with its own checkpoint_storage block merged over the cluster's.

    A config without one is returned as is: expansion then takes the cluster's block whole (and
    says so when that block is invalid)."""
    storage = config.get("checkpoint_storage")
    if storage is None or cluster is None:
        return config
    return {**config, "checkpoint_storage": merge_checkpoint_storage(storage, cluster)}
