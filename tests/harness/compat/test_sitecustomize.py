"""How ``import determined`` resolves in a task: the task library's sitecustomize.

pylib is first on a task's PYTHONPATH. Its sitecustomize appends our ``determined`` (in
``harness/_compat``) to the end of sys.path, so the real package wins wherever the task's Python
has one; it chains to the interpreter's own sitecustomize; and on the process runtime it points
a real package at ``$DET_RUN_DIR/info`` (and at the shared_fs host path).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import _sitecustomize
from harness._info import ClusterInfo, RendezvousInfo, ResourcesInfo, TrialInfo
from tests.harness.compat.conftest import clean_env, det_python, run_python


def write_info(run_dir: Path, host_path: Path, task_type: str = "TRIAL") -> Path:
    """The files the master sends into a task's run dir (``info/``), Determined's keys."""
    info = run_dir / "info"
    info.mkdir(parents=True)
    config = {
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(host_path)},
        "searcher": {"name": "single", "metric": "loss"},
    }
    ClusterInfo(
        master_url="http://127.0.0.1:1",
        cluster_id="c1",
        agent_id="agent-1",
        slot_ids=[0],
        task_id="task-1",
        allocation_id="task-1.alloc",
        session_token="token",
        task_type=task_type,
        latest_checkpoint="ckpt-uuid",
    )._to_file(info / "cluster.json")
    TrialInfo(7, 3, 11, {"lr": 0.1}, config, 5, 2, False, None)._to_file(info / "trial.json")
    RendezvousInfo(["127.0.0.1"], 0, [1])._to_file(info / "rendezvous.json")
    ResourcesInfo([])._to_file(info / "resources.json")
    return info


class TestOurDetermined:
    def test_import_determined_is_ours_when_the_python_has_none(
        self, pylib: Path, our_python: str, tmp_path: Path
    ) -> None:
        code = (
            "import sys, json, determined as det\n"
            "loaded = sorted(m for m in sys.modules if m.startswith(('harness.', 'determined.')))\n"
            "print(json.dumps({'file': det.__file__, 'log_format': det.LOG_FORMAT,\n"
            "    'last': sys.path[-1], 'loaded': loaded, 'info': det.get_cluster_info()}))\n"
        )
        out = run_python(our_python, code, clean_env(PYTHONPATH=str(pylib)), cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        compat = pylib / "harness" / "_compat"
        assert got["file"] == str(compat / "determined" / "__init__.py")
        assert got["log_format"] == "%(levelname)s: [%(process)s] %(name)s: %(message)s"
        assert got["last"] == str(compat)  # appended: after site-packages
        assert got["loaded"] == []  # nothing but the two packages' roots: names load on use
        assert got["info"] is None

    def test_determineds_injection_point_reaches_the_harness(
        self, pylib: Path, our_python: str, tmp_path: Path
    ) -> None:
        code = (
            "import determined as det\n"
            "from determined import _info\n"
            "import harness._info\n"
            "info = det.ClusterInfo('http://m:8080', 'c', 'a', [0], 't', 'a1', 'tok', 'COMMAND')\n"
            "_info._info = info\n"
            "assert _info is harness._info and det.get_cluster_info() is info\n"
            "print('ok')\n"
        )
        out = run_python(our_python, code, clean_env(PYTHONPATH=str(pylib)), cwd=tmp_path)
        assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr

    def test_ours_reads_the_run_dir_on_the_process_runtime(
        self, pylib: Path, our_python: str, tmp_path: Path
    ) -> None:
        write_info(tmp_path / "run", tmp_path / "shared")
        code = (
            "import determined as det\n"
            "info = det.get_cluster_info()\n"
            "print(info.trial.trial_id, info.latest_checkpoint, info.container_addrs)\n"
        )
        env = clean_env(PYTHONPATH=str(pylib), DET_RUN_DIR=str(tmp_path / "run"))
        out = run_python(our_python, code, env, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split("\n")[0] == "7 ckpt-uuid ['127.0.0.1']"

    def test_launch_modules_run_under_determineds_names(
        self, pylib: Path, our_python: str, tmp_path: Path
    ) -> None:
        env = clean_env(PYTHONPATH=str(pylib), RANK="3")

        def module(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [our_python, "-m", *argv],
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp_path,
                timeout=120,
            )

        out = module("determined.launch.wrap_rank", "RANK", our_python, "-c", "print('hi')")
        assert (out.returncode, out.stdout) == (0, "[rank=3] hi\n"), out.stderr
        show = "import os; print('worker', os.environ['RANK'], os.environ['WORLD_SIZE'])"
        out = module("determined.launch.torch_distributed", our_python, "-c", show)
        assert out.returncode == 0, out.stderr
        assert "[rank=0] worker 0 1" in out.stdout
        out = module("determined.launch.torch_distributed", "--trial", "a:B", "extra")
        assert out.returncode == 2 and "extra arguments to --trial" in out.stderr


class TestTheRealPackage:
    def test_a_real_determined_wins(self, pylib: Path, tmp_path: Path) -> None:
        python = det_python()
        code = "import determined, sys; print(determined.__file__); print(sys.path[-1])"
        out = run_python(python, code, clean_env(PYTHONPATH=str(pylib)), cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        file, last = out.stdout.split()
        assert "site-packages" in file and str(pylib) not in file
        assert last == str(pylib / "harness" / "_compat")

    def test_the_real_package_finds_the_run_dir_on_the_process_runtime(
        self, pylib: Path, tmp_path: Path
    ) -> None:
        python = det_python()
        write_info(tmp_path / "run", tmp_path / "shared")
        code = (
            "import json, determined as det\n"
            "from determined.common import constants\n"
            "import determined._info as m\n"
            "info = det.get_cluster_info()\n"
            "print(json.dumps({'trial': info.trial.trial_id, 'run': info.trial._trial_run_id,\n"
            "    'latest': info.latest_checkpoint, 'addrs': info.container_addrs,\n"
            "    'gpus': info.gpu_uuids, 'mount': constants.SHARED_FS_CONTAINER_PATH,\n"
            "    'loader': type(m.__loader__).__name__, 'file': det.__file__}))\n"
        )
        env = clean_env(PYTHONPATH=str(pylib), DET_RUN_DIR=str(tmp_path / "run"))
        out = run_python(python, code, env, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        assert str(pylib) not in got.pop("file")
        assert got == {
            "trial": 7,
            "run": 2,
            "latest": "ckpt-uuid",
            "addrs": ["127.0.0.1"],
            "gpus": [],
            "mount": str(tmp_path / "shared"),
            "loader": "SourceFileLoader",  # the real module keeps its own loader
        }

    def test_without_a_run_dir_the_real_package_is_untouched(
        self, pylib: Path, tmp_path: Path
    ) -> None:
        python = det_python()
        code = (
            "import determined as det\n"
            "from determined.common import constants\n"
            "print(det.get_cluster_info(), constants.SHARED_FS_CONTAINER_PATH)\n"
        )
        out = run_python(python, code, clean_env(PYTHONPATH=str(pylib)), cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "None /determined_shared_fs"


class TestChaining:
    def test_the_interpreters_own_sitecustomize_still_runs(
        self, pylib: Path, our_python: str, tmp_path: Path
    ) -> None:
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        (theirs / "sitecustomize.py").write_text("import sys\nsys.THEIRS_RAN = __file__\n")
        code = "import sys, determined; print(sys.THEIRS_RAN); print(determined.__file__)"
        env = clean_env(PYTHONPATH=f"{pylib}:{theirs}")
        out = run_python(our_python, code, env, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        ran, file = out.stdout.split()
        assert ran == str(theirs / "sitecustomize.py") and str(pylib) in file

    def test_a_failing_one_is_reported_and_ours_still_works(
        self, pylib: Path, our_python: str, tmp_path: Path
    ) -> None:
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        (theirs / "sitecustomize.py").write_text("raise RuntimeError('broken image')\n")
        env = clean_env(PYTHONPATH=f"{pylib}:{theirs}")
        out = run_python(our_python, "import determined; print('ok')", env, cwd=tmp_path)
        assert out.returncode == 0 and out.stdout.strip() == "ok"
        assert "Error in sitecustomize" in out.stderr and "broken image" in out.stderr

    def test_chain_skips_its_own_folder(self, tmp_path: Path) -> None:
        ours, theirs = tmp_path / "ours", tmp_path / "theirs"
        for folder, value in ((ours, "ours"), (theirs, "theirs")):
            folder.mkdir()
            (folder / "sitecustomize.py").write_text(f"WHO = {value!r}\n")
        module = _sitecustomize.chain([str(theirs), str(ours), str(theirs)], here=str(ours))
        assert module is not None and module.WHO == "theirs"
        assert _sitecustomize.chain([str(ours)], here=str(ours)) is None


class TestRunDirInfo:
    def test_the_process_runtime(self, tmp_path: Path) -> None:
        write_info(tmp_path / "run", tmp_path / "shared")
        env = {"DET_RUN_DIR": str(tmp_path / "run")}
        assert _sitecustomize.run_dir_info(env) == str(tmp_path / "run" / "info")

    @pytest.mark.parametrize(
        "env",
        [{}, {"DET_RUN_DIR": "/run/determined"}, {"DET_INFO_DIR": "/run/determined/info"}],
    )
    def test_nothing_to_do(self, env: dict[str, str]) -> None:
        assert _sitecustomize.run_dir_info(env) is None

    def test_a_run_dir_without_info_files(self, tmp_path: Path) -> None:
        assert _sitecustomize.run_dir_info({"DET_RUN_DIR": str(tmp_path)}) is None

    def test_the_hook_ignores_other_modules_and_ours(self, tmp_path: Path) -> None:
        hook = _sitecustomize.RealDeterminedHook(str(tmp_path), compat=str(tmp_path))
        assert hook.find_spec("json") is None
        assert hook.find_spec("determined._info", [str(tmp_path / "determined")]) is None
        assert sys.meta_path.count(hook) == 0
