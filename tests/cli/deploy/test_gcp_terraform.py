"""cli.deploy.gcp_terraform: the steps, the working folder, and running them in order."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from cli.deploy import gcp_terraform as tf
from cli.deploy.gcp_template import TERRAFORM_DIR


def test_up_and_down_steps() -> None:
    backend = ("-backend-config=bucket=b1", "-backend-config=prefix=terraform/state")
    assert [s.args for s in tf.up_steps("b1")] == [
        ("init", "-input=false", "-reconfigure", *backend),
        ("plan", "-input=false", "-var-file=terraform.tfvars.json", "-out=resolute.tfplan"),
        ("apply", "-input=false", "resolute.tfplan"),
    ]
    down = [s.args for s in tf.down_steps("b1")]
    assert [a[0] for a in down] == ["init", "apply", "destroy"]
    assert all("-var=allow_data_deletion=true" in a for a in down[1:])


def test_the_working_folder_is_the_module_tree_plus_the_variables(tmp_path: Path) -> None:
    (tmp_path / "terraform-gcp" / ".terraform").mkdir(parents=True)
    root = tf.prepare_workdir(tmp_path, {"b": 2, "a": "x"})
    copied = {p.relative_to(root) for p in root.rglob("*") if p.is_file()}
    source = {p.relative_to(TERRAFORM_DIR) for p in TERRAFORM_DIR.rglob("*") if p.is_file()}
    assert copied == source | {Path("terraform.tfvars.json")}
    assert json.loads((root / "terraform.tfvars.json").read_text()) == {"a": "x", "b": 2}


class Recorder:
    def __init__(self, codes: dict[str, int]) -> None:
        self.codes = codes
        self.calls: list[tuple[list[str], Path, dict[str, str]]] = []

    def __call__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> int:
        self.calls.append((list(argv), cwd, dict(env)))
        return self.codes.get(argv[1], 0)


@pytest.mark.parametrize("failing", ["init", "plan", "apply"])
def test_the_first_failing_step_stops_the_run_with_its_code(tmp_path: Path, failing: str) -> None:
    runner = Recorder({failing: 7})
    with pytest.raises(tf.TerraformFailed) as caught:
        tf.run_steps("/bin/terraform", tf.up_steps("b"), tmp_path, runner=runner)
    assert (caught.value.step, caught.value.returncode) == (failing, 7)
    assert runner.calls[-1][0][1] == failing
    assert len(runner.calls) == ["init", "plan", "apply"].index(failing) + 1


def test_secrets_go_through_the_environment_only(tmp_path: Path) -> None:
    runner = Recorder({})
    tf.run_steps(
        "/bin/terraform", tf.up_steps("b"), tmp_path, secrets={"db_password": "pw"}, runner=runner
    )
    assert all(env["TF_VAR_db_password"] == "pw" for _, _, env in runner.calls)
    assert all("pw" not in argv for argv, _, _ in runner.calls)
    assert all(cwd == tmp_path for _, cwd, _ in runner.calls)


def test_no_terraform_on_path_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(tf.TerraformMissing, match=r"Install Terraform 1\.5 or newer"):
        tf.find_terraform(str(tmp_path))
