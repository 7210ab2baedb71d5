"""`det deploy gcp up|down|list`: the steps, in order, around Terraform and the two GCP APIs.

up:   check Terraform is installed → the wheel of this very Resolute version → the state bucket
      (created if missing) gets the wheel and the variables → terraform init/plan/apply.
down: the variables from the state bucket (nothing local needed) → delete the master VM, then
      every dynamic agent by label, until none is listed → terraform apply (lift deletion
      protection) and destroy → a leak check by label → delete the state bucket.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any

from cli.deploy import gcp_terraform as tf
from cli.deploy.gcp_config import (
    AGENTS_LABEL,
    CLUSTER_LABEL,
    ROLE_LABEL,
    VARIABLES_OBJECT,
    WHEELS_PREFIX,
    GcpDeployment,
    default_state_bucket,
)
from cli.deploy.gcp_template import TERRAFORM_DIR
from cli.deploy.master_tls import MasterTls
from cli.errors import CliError

_WHEEL_NAME = re.compile(r"resolute-(?P<version>[^-]+)-[^/]+\.whl")


class DeployError(CliError):
    """A deploy step failed; `exit_code` is Terraform's own when Terraform failed."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Seams:
    """Where the CLI meets the world; tests point these at fakes on 127.0.0.1."""

    compute_endpoint: str | None = None
    terraform_path: str | None = None
    poll_interval: float = 5.0
    agents_timeout: float = 900.0
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    say: Callable[[str], None] = print


@contextmanager
def cloud_errors() -> Iterator[None]:
    """A failed Cloud Storage or Compute call becomes one clear line, not a traceback."""
    from cli.deploy.gcp_bucket import StateBucketError
    from provisioners.gcp_compute import GcpCallError

    try:
        yield
    except (StateBucketError, GcpCallError) as exc:
        raise DeployError(str(exc)) from None


def resolute_version() -> str:
    return metadata.version("resolute")


def resolve_wheel(wheel: Path | None, build_dir: Path) -> Path:
    """The wheel of the running Resolute version: the one given, or one built from the source."""
    version = resolute_version()
    if wheel is None:
        source = TERRAFORM_DIR.parents[1]
        if not (source / "pyproject.toml").is_file():
            raise DeployError(
                "cannot build a Resolute wheel: this installation has no source tree; pass "
                f"--wheel with resolute-{version}-py3-none-any.whl"
            )
        command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(build_dir)]
        done = subprocess.run([*command, str(source)], capture_output=True, text=True, check=False)
        built = sorted(build_dir.glob("resolute-*.whl"))
        if done.returncode != 0 or not built:
            raise DeployError(f"building the Resolute wheel failed:\n{done.stderr.strip()}")
        wheel = built[-1]
    match = _WHEEL_NAME.fullmatch(wheel.name)
    if not wheel.is_file() or match is None:
        raise DeployError(f"--wheel {wheel}: not a Resolute wheel file (resolute-<version>-….whl)")
    if match["version"] != version:
        raise DeployError(
            f"--wheel {wheel.name} is Resolute {match['version']}, but this CLI is {version}: the "
            "cluster runs the version that deployed it"
        )
    return wheel


def up(
    d: GcpDeployment,
    *,
    db_password: str,
    wheel: Path | None,
    tls: MasterTls | None = None,
    workdir: Path | None,
    seams: Seams,
) -> dict[str, Any]:
    """Create or update the cluster; returns Terraform's outputs."""
    from cli.deploy.gcp_bucket import StateBucket

    binary = _terraform(seams)
    with tempfile.TemporaryDirectory(prefix="resolute-gcp-") as scratch:
        built = resolve_wheel(wheel, Path(scratch))
        d = replace(d, resolute_wheel=built.name, resolute_version=resolute_version())
        bucket = StateBucket(d.state_bucket, d.project_id)
        if bucket.ensure(d.region, {**d.labels, CLUSTER_LABEL: d.cluster_id}):
            seams.say(f"Created the state bucket gs://{d.state_bucket}")
        bucket.upload(f"{WHEELS_PREFIX}{built.name}", built.read_bytes())
        bucket.upload(VARIABLES_OBJECT, _tfvars_json(d), "application/json")
        root = tf.prepare_workdir(workdir or Path(scratch), d.tfvars())
        secrets = {"db_password": db_password} if db_password else {}
        if tls is not None:
            secrets |= {"master_tls_cert": tls.cert, "master_tls_key": tls.key}
        _run(binary, tf.up_steps(d.state_bucket), root, secrets, seams)
        try:
            return tf.read_outputs(binary, root)
        except tf.TerraformFailed as exc:
            raise DeployError(f"the cluster is up, but {exc}", exit_code=exc.returncode) from None


def load_deployment(cluster_id: str, project_id: str, state_bucket: str | None) -> GcpDeployment:
    """The variables `up` stored in the cluster's state bucket."""
    from cli.deploy.gcp_bucket import StateBucket

    probe = GcpDeployment(cluster_id=cluster_id, project_id=project_id)
    name = state_bucket or default_state_bucket(probe)
    raw = StateBucket(name, project_id).download(VARIABLES_OBJECT)
    if raw is None:
        raise DeployError(
            f"no cluster {cluster_id!r} in project {project_id}: gs://{name}/{VARIABLES_OBJECT} "
            "does not exist (see `det deploy gcp list --project-id " + project_id + "`)"
        )
    try:
        return GcpDeployment(**json.loads(raw))
    except (TypeError, ValueError) as exc:
        raise DeployError(f"gs://{name}/{VARIABLES_OBJECT} is not usable: {exc}") from None


def down(d: GcpDeployment, *, workdir: Path | None, seams: Seams) -> None:
    from cli.deploy.gcp_bucket import StateBucket

    binary = _terraform(seams)
    # The master first, so that it cannot launch agents while they are being deleted.
    _delete_until_gone(d, {CLUSTER_LABEL: d.cluster_id, ROLE_LABEL: "master"}, "master", seams)
    _delete_until_gone(d, {AGENTS_LABEL: d.cluster_id}, "dynamic agents", seams)
    with tempfile.TemporaryDirectory(prefix="resolute-gcp-") as scratch:
        root = tf.prepare_workdir(workdir or Path(scratch), d.tfvars())
        _run(binary, tf.down_steps(d.state_bucket), root, {}, seams)
    left = leftovers(d, seams)
    if left:
        raise DeployError(
            "terraform destroy finished, but these resources of the cluster remain (the state "
            f"bucket gs://{d.state_bucket} is kept; delete them, then run down again): "
            + "; ".join(left)
        )
    StateBucket(d.state_bucket, d.project_id).delete()
    seams.say(
        f"Deleted the state bucket gs://{d.state_bucket}; nothing labelled "
        f"{CLUSTER_LABEL}={d.cluster_id} is left"
    )


def leftovers(d: GcpDeployment, seams: Seams) -> list[str]:
    """What of the cluster still exists after destroy, as far as the CLI's two GCP clients can
    see: instances labelled with the cluster (in any zone), and the checkpoint bucket."""
    from cli.deploy.gcp_bucket import StateBucket

    left = [
        f"instance {i.name} ({i.zone}, {i.status})"
        for i in _instances(d.project_id, {CLUSTER_LABEL: d.cluster_id}, None, seams)
    ]
    if StateBucket(d.checkpoint_bucket, d.project_id).exists():
        left.append(f"bucket gs://{d.checkpoint_bucket}")
    return left


def list_clusters(project_id: str, seams: Seams) -> list[dict[str, str]]:
    masters = _instances(project_id, {ROLE_LABEL: "master"}, None, seams)
    return [
        {
            "cluster_id": m.labels.get(CLUSTER_LABEL, ""),
            "zone": m.zone,
            "master": m.name,
            "status": m.status,
            "master_ip": m.external_ip,
        }
        for m in masters
    ]


# -- helpers ---------------------------------------------------------------------------------


def _terraform(seams: Seams) -> str:
    if not TERRAFORM_DIR.is_dir():
        raise DeployError(
            f"the Terraform modules are not at {TERRAFORM_DIR}: this Resolute installation is "
            "incomplete; reinstall it (pip install 'resolute[gcp]')"
        )
    try:
        return tf.find_terraform(seams.terraform_path)
    except tf.TerraformMissing as exc:
        raise DeployError(str(exc)) from None


def _run(
    binary: str, steps: list[tf.Step], root: Path, secrets: dict[str, str], seams: Seams
) -> None:
    try:
        tf.run_steps(binary, steps, root, secrets=secrets, announce=seams.say)
    except tf.TerraformFailed as exc:
        raise DeployError(
            f"{exc}; Terraform's message is above. Fix the cause and run the same command "
            "again: the state in the bucket records what exists, so nothing is made twice.",
            exit_code=exc.returncode,
        ) from None


def _tfvars_json(d: GcpDeployment) -> bytes:
    return (json.dumps(d.tfvars(), indent=2, sort_keys=True) + "\n").encode()


def _instances(project: str, labels: dict[str, str], zone: str | None, seams: Seams) -> list[Any]:
    from provisioners.gcp_compute import labelled_instances

    return labelled_instances(
        project=project, labels=labels, zone=zone, api_endpoint=seams.compute_endpoint
    )


def _delete_until_gone(d: GcpDeployment, labels: dict[str, str], what: str, seams: Seams) -> None:
    from provisioners.gcp_compute import delete_instances

    deadline = seams.monotonic() + seams.agents_timeout
    announced = False
    while listed := _instances(d.project_id, labels, d.zone, seams):
        if not announced:
            seams.say(f"Deleting the {what}: {', '.join(i.name for i in listed)}")
            announced = True
        if seams.monotonic() >= deadline:
            names = ", ".join(i.name for i in listed)
            raise DeployError(
                f"the {what} are still listed after {seams.agents_timeout:g} s: {names}"
            )
        delete_instances(
            project=d.project_id, instances=listed, api_endpoint=seams.compute_endpoint
        )
        seams.sleep(seams.poll_interval)


def check_can_destroy(d: GcpDeployment, delete_data: bool) -> None:
    if not delete_data:
        raise DeployError(
            f"down deletes the Cloud SQL database {d.cluster_id}-db (experiments, users, "
            f"metrics) and the checkpoint bucket gs://{d.checkpoint_bucket}. Export what you "
            f"want to keep first (gcloud sql export sql {d.cluster_id}-db "
            f"gs://<another bucket>/resolute.sql --database=resolute; gcloud storage cp -r "
            f"gs://{d.checkpoint_bucket} …), then run down again with --delete-data.",
            exit_code=2,
        )
