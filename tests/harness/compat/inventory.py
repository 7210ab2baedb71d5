"""Print the public API of Determined modules as JSON: ``python inventory.py MODULE...``.

Run by tests/harness/compat/test_inventory.py twice: with determined==0.38.1's interpreter (the
real package) and with a Python that has only our task library (``pylib``) on its path (our
shim). Standard library only; it must run on both.

Per module: its public names (no leading underscore, plus the private names listed in EXTRA),
leaving out what a module merely imports for itself (other packages' modules, typing names).
Per name: its kind; for functions the parameters (name, kind, default); for classes their
constructor and public members; for enums their members and values; for constants the value.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import json
import re
import sys
import types
import typing
from typing import Any

# Private names that user code nevertheless uses.
EXTRA = {
    "determined": ["_info"],
    "determined.common.util": ["_LEGACY_TRAINING", "_LEGACY_VALIDATION", "_INFERENCE"],
    "determined.pytorch": ["TorchData"],
}
OURS = ("determined", "harness")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def default(value: Any) -> Any:
    if value is inspect.Parameter.empty:
        return None
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, (type, types.FunctionType)):
        return f"<{value.__name__}>"
    if type(value).__module__ != "builtins":
        return f"<{type(value).__name__} instance>"
    return _ADDRESS.sub("", repr(value))


def params(func: Any) -> Any:
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return "?"
    return [[p.name, p.kind.name, default(p.default)] for p in sig.parameters.values()]


def _is_ours(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] in OURS


def _builtin_members(cls: type) -> set[str]:
    names: set[str] = set()
    for base in cls.__mro__:
        if not _is_ours(base):
            names.update(dir(base))
    return names


def member(cls: type, name: str) -> Any:
    raw = inspect.getattr_static(cls, name)
    if isinstance(raw, property):
        return {"kind": "property"}
    if isinstance(raw, classmethod):
        return {"kind": "classmethod", "params": params(getattr(cls, name))}
    if isinstance(raw, staticmethod):
        return {"kind": "staticmethod", "params": params(getattr(cls, name))}
    if inspect.isfunction(raw):
        return {"kind": "method", "params": params(raw)}
    if isinstance(raw, type):
        return {"kind": "class"}
    return value(raw)


def value(obj: Any) -> Any:
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return {"kind": "value", "value": obj}
    return {"kind": "value", "type": type(obj).__name__}


def describe(obj: Any) -> Any:
    if isinstance(obj, types.ModuleType):
        return {"kind": "module"}
    if isinstance(obj, type) and issubclass(obj, enum.Enum):
        return {"kind": "enum", "members": {m.name: default(m.value) for m in obj}}
    if isinstance(obj, type):
        skip = _builtin_members(obj)
        names = [n for n in dir(obj) if not n.startswith("_") and n not in skip]
        out: dict[str, Any] = {
            "kind": "exception" if issubclass(obj, BaseException) else "class",
            "init": params(obj),
            "members": {n: member(obj, n) for n in names},
        }
        return out
    if callable(obj):
        return {"kind": "function", "params": params(obj)}
    return value(obj)


def public(module: types.ModuleType) -> dict[str, Any]:
    out: dict[str, Any] = {}
    names = [n for n in dir(module) if not n.startswith("_")] + EXTRA.get(module.__name__, [])
    for name in names:
        if not hasattr(module, name):
            continue
        obj = getattr(module, name)
        if name in EXTRA.get(module.__name__, []) and getattr(obj, "__module__", "") == "typing":
            out[name] = {"kind": "typing alias"}
            continue
        if type(obj).__module__ == "__future__":
            continue  # ``from __future__ import annotations``
        if isinstance(obj, typing.TypeVar) or getattr(obj, "__module__", None) == "typing":
            continue  # typing helpers the module imported
        if isinstance(obj, types.ModuleType) and not obj.__name__.startswith(OURS):
            continue  # a library the module imported
        if (isinstance(obj, type) or callable(obj)) and not _is_ours(obj):
            continue  # a class or function imported from elsewhere (stdlib, torch)
        out[name] = describe(obj)
    return out


def main(argv: list[str]) -> None:
    """``[--append-path DIR] MODULE...``: DIR goes to the end of sys.path (torch for the real
    package's interpreter, which has none of its own)."""
    if argv[:1] == ["--append-path"]:
        sys.path.append(argv[1])
        argv = argv[2:]
    result: dict[str, Any] = {}
    imported: dict[str, Any] = {}
    for name in argv:  # all first: a package's names include the submodules imported since
        try:
            imported[name] = importlib.import_module(name)
        except Exception as exc:  # report it: the test names the module that failed
            result[name] = {"error": f"{type(exc).__name__}: {exc}"}
    for name, module in imported.items():
        result[name] = public(module)
    json.dump(result, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")  # the real client warns about its deprecated names
    main(sys.argv[1:])
