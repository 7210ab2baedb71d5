"""The task library's ``sitecustomize``: the agent copies this file to ``<pylib>/sitecustomize.py``.

pylib is first on every task's PYTHONPATH, so Python's ``site`` runs this file at the start of
every Python process of a task (``python -S`` and ``-I`` skip it). It does three things, with
``os`` and ``sys`` only (``site`` has loaded both already): a task's start-up must stay cheap.

1. It runs the ``sitecustomize`` the interpreter would have run without ours (Debian's Python
   has one; an image or a venv may have its own): the first one on sys.path after pylib.
2. It appends ``<pylib>/harness/_compat`` to the END of sys.path. That folder holds our
   ``determined`` package, Determined's public API served by the harness. A real
   ``determined`` installed in the task's Python (site-packages, user site, PYTHONPATH) comes
   earlier on sys.path and wins, untouched; ours is found only where there is none.
3. On the process runtime (no ``/run/determined/info``; the master's info files are in
   ``$DET_RUN_DIR/info``), it makes a real ``determined`` package find its cluster there: an
   import hook watches two modules, and nothing else, of the real package. When
   ``determined._info`` is imported, the default paths of its ``_from_file``/``_to_file``
   methods (``/run/determined/info/*.json``) are pointed at the run dir's, so
   ``det.get_cluster_info()`` reads them as it would in a container, lazily, at first use. When
   ``determined.common.constants`` is imported, its ``SHARED_FS_CONTAINER_PATH`` becomes the
   trial's shared_fs ``host_path`` (a process has no mount, whatever folders the host has: the
   host path is where the files are, as ``harness.core._storage.shared_fs_base`` decides too).
   Our own ``determined`` needs neither: the harness reads ``$DET_RUN_DIR/info`` itself.

As ``harness._sitecustomize`` (tests) nothing runs on import.
"""

import os
import sys

PYLIB = os.path.dirname(os.path.abspath(__file__))
COMPAT = os.path.join(PYLIB, "harness", "_compat")
CONTAINER_INFO = "/run/determined/info"
INFO_FILES = (
    ("ClusterInfo", "cluster.json", "DEFAULT_CLUSTER_INFO_PATH"),
    ("TrialInfo", "trial.json", "DEFAULT_TRIAL_INFO_PATH"),
    ("RendezvousInfo", "rendezvous.json", "DEFAULT_RENDEZVOUS_INFO_PATH"),
    ("ResourcesInfo", "resources.json", "DEFAULT_RESOURCES_INFO_PATH"),
)


def _path_finder():
    for finder in sys.meta_path:
        if getattr(finder, "__name__", "") == "PathFinder":
            return finder
    return None


def chain(path=None, here=PYLIB):
    """Run the first ``sitecustomize`` on ``path`` (sys.path) after ``here``; return it."""
    entries = sys.path if path is None else path
    rest = []
    seen = False
    for entry in entries:
        if entry and os.path.abspath(entry) == here:
            seen = True
        elif seen:
            rest.append(entry)
    if not seen:
        rest = [e for e in entries if not e or os.path.abspath(e) != here]
    finder = _path_finder()
    spec = finder.find_spec("sitecustomize", rest) if finder is not None else None
    if spec is None or spec.loader is None:
        return None
    module = type(sys)("sitecustomize")
    module.__file__ = spec.origin
    module.__spec__ = spec
    module.__loader__ = spec.loader
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # as site does for its own sitecustomize: say so, go on
        sys.stderr.write(f"Error in sitecustomize {spec.origin}: {type(exc).__name__}: {exc}\n")
    return module


def run_dir_info(env):
    """The folder with the master's info files when the task runs outside a container (the
    process runtime), else None."""
    folder = env.get("DET_INFO_DIR")
    if not folder and env.get("DET_RUN_DIR"):
        folder = os.path.join(env["DET_RUN_DIR"], "info")
    if not folder or os.path.abspath(folder) == CONTAINER_INFO:
        return None
    if os.path.exists(os.path.join(CONTAINER_INFO, "cluster.json")):
        return None  # a container: the real package finds its files where it always looks
    if not os.path.isfile(os.path.join(folder, "cluster.json")):
        return None
    return folder


def point_info_at(module, folder):
    """Make ``determined._info`` read (and write) its files in ``folder``."""
    for class_name, file_name, constant in INFO_FILES:
        old = CONTAINER_INFO + "/" + file_name
        new = os.path.join(folder, file_name)
        if getattr(module, constant, None) == old:
            setattr(module, constant, new)
        cls = getattr(module, class_name, None)
        for method in ("_from_file", "_to_file"):
            func = getattr(getattr(cls, method, None), "__func__", getattr(cls, method, None))
            if getattr(func, "__defaults__", None) == (old,):
                func.__defaults__ = (new,)


def point_shared_fs_at_host(module, folder):
    """A process task has no shared_fs mount (even where the host happens to have a folder at
    the container path): the trial's shared_fs host path is where its checkpoints are."""
    if not getattr(module, "SHARED_FS_CONTAINER_PATH", None):
        return
    import json  # only here: a real determined package is being imported, which loads json

    try:
        with open(os.path.join(folder, "trial.json"), encoding="utf-8") as f:
            storage = (json.load(f).get("config") or {}).get("checkpoint_storage") or {}
    except (OSError, ValueError, AttributeError):
        return
    if storage.get("type") == "shared_fs" and storage.get("host_path"):
        module.SHARED_FS_CONTAINER_PATH = storage["host_path"]


PATCHES = {
    "determined._info": point_info_at,
    "determined.common.constants": point_shared_fs_at_host,
}


class _PatchAfterExec:
    """Wraps a module's loader: runs it, then the patch. The module keeps the real loader."""

    def __init__(self, loader, patch, folder):
        self.loader = loader
        self.patch = patch
        self.folder = folder

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = self.loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.patch(module, self.folder)

    def __getattr__(self, name):
        return getattr(self.loader, name)


class RealDeterminedHook:
    """A meta path finder that answers for the modules in PATCHES only, and only when they
    come from a real determined package (never from ours, under COMPAT)."""

    def __init__(self, folder, compat=COMPAT):
        self.folder = folder
        self.compat = compat

    def find_spec(self, fullname, path=None, target=None):
        patch = PATCHES.get(fullname)
        if patch is None:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None:
            return None
        if (spec.origin or "").startswith(self.compat + os.sep):
            return None  # our own shim
        spec.loader = _PatchAfterExec(spec.loader, patch, self.folder)
        return spec


def main():
    chain()
    if COMPAT not in sys.path:
        sys.path.append(COMPAT)
    folder = run_dir_info(os.environ)
    if folder is not None:
        sys.meta_path.insert(0, RealDeterminedHook(folder))


if __name__ == "sitecustomize":
    main()
