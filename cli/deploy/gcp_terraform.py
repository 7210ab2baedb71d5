"""Running Terraform for `det deploy gcp`: the commands (pure), and their execution.

The module tree of terraform/gcp is copied into a working folder together with the variables
file; the state stays in the cluster's state bucket (backend "gcs", given at `init` with
-backend-config), so any machine with the deployer's credentials can run `down`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli.deploy.gcp_config import STATE_PREFIX
from cli.deploy.gcp_template import TERRAFORM_DIR

VARIABLES_FILE = "terraform.tfvars.json"
PLAN_FILE = "resolute.tfplan"
INSTALL_HINT = (
    "terraform was not found on PATH. Install Terraform 1.5 or newer "
    "(https://developer.hashicorp.com/terraform/install; on Debian/Ubuntu: HashiCorp's apt "
    "repository, `apt-get install terraform`), or put OpenTofu's `tofu` on PATH as `terraform`, "
    "and run the command again. `det deploy gcp up --dry-run` works without it."
)


class TerraformMissing(RuntimeError):
    """No terraform binary: the message says what to install."""


class TerraformFailed(RuntimeError):
    """A terraform step exited non-zero; `returncode` is Terraform's own."""

    def __init__(self, step: str, returncode: int) -> None:
        super().__init__(f"terraform {step} failed with exit code {returncode}")
        self.step = step
        self.returncode = returncode


@dataclass(frozen=True)
class Step:
    """One terraform invocation: its sub-command name and full argument list."""

    name: str
    args: tuple[str, ...]


def find_terraform(path: str | None = None) -> str:
    binary = shutil.which("terraform", path=path)
    if binary is None:
        raise TerraformMissing(INSTALL_HINT)
    return binary


def backend_config(state_bucket: str) -> tuple[str, ...]:
    return (f"-backend-config=bucket={state_bucket}", f"-backend-config=prefix={STATE_PREFIX}")


def init_step(state_bucket: str) -> Step:
    # -reconfigure: a working folder reused for another cluster must not migrate its state.
    args = ("init", "-input=false", "-reconfigure", *backend_config(state_bucket))
    return Step("init", args)


def up_steps(state_bucket: str) -> list[Step]:
    """init, plan into a file, apply exactly that plan."""
    var_file = f"-var-file={VARIABLES_FILE}"
    return [
        init_step(state_bucket),
        Step("plan", ("plan", "-input=false", var_file, f"-out={PLAN_FILE}")),
        Step("apply", ("apply", "-input=false", PLAN_FILE)),
    ]


def down_steps(state_bucket: str) -> list[Step]:
    """init; lift the database's deletion protection (and let the bucket go); destroy."""
    var_file = f"-var-file={VARIABLES_FILE}"
    allow = "-var=allow_data_deletion=true"
    return [
        init_step(state_bucket),
        Step("apply", ("apply", "-input=false", "-auto-approve", var_file, allow)),
        Step("destroy", ("destroy", "-input=false", "-auto-approve", var_file, allow)),
    ]


def output_step() -> Step:
    return Step("output", ("output", "-json"))


def prepare_workdir(workdir: Path, tfvars: Mapping[str, Any]) -> Path:
    """Copy the module tree into `workdir` and write the variables file; returns the root."""
    root = workdir / "terraform-gcp"
    shutil.copytree(
        TERRAFORM_DIR,
        root,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns(".terraform", "*.tfstate*", "*.tfplan"),
    )
    (root / VARIABLES_FILE).write_text(json.dumps(dict(tfvars), indent=2, sort_keys=True) + "\n")
    return root


Runner = Callable[[Sequence[str], Path, Mapping[str, str]], int]


def run_subprocess(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> int:
    """Terraform's output goes straight to the user's terminal."""
    return subprocess.run(list(argv), cwd=cwd, env=dict(env), check=False).returncode


def run_steps(
    binary: str,
    steps: Sequence[Step],
    root: Path,
    *,
    secrets: Mapping[str, str] | None = None,
    runner: Runner = run_subprocess,
    announce: Callable[[str], None] = lambda _: None,
) -> None:
    """Run the steps in order; the first that fails raises TerraformFailed with its code.

    `secrets` are root variables passed as TF_VAR_<name>, so that no file holds them.
    """
    env = dict(os.environ)
    env["TF_IN_AUTOMATION"] = "1"
    for name, value in (secrets or {}).items():
        env[f"TF_VAR_{name}"] = value
    for step in steps:
        announce(f"terraform {' '.join(step.args)}")
        code = runner([binary, *step.args], root, env)
        if code != 0:
            raise TerraformFailed(step.name, code)


def read_outputs(binary: str, root: Path) -> dict[str, Any]:
    """`terraform output -json`, as name -> value."""
    done = subprocess.run(
        [binary, *output_step().args], cwd=root, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise TerraformFailed("output", done.returncode)
    try:
        raw = json.loads(done.stdout or "{}")
    except json.JSONDecodeError:
        return {}
    return {name: entry.get("value") for name, entry in raw.items() if isinstance(entry, dict)}
