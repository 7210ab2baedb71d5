"""`det deploy gcp`, run as a subprocess against a fake `terraform` on PATH, the fake Compute
server and the fake Cloud Storage server (real google-cloud-* clients, plain HTTP on 127.0.0.1).

Terraform itself cannot run here (no provider can be fetched): these tests cover what the CLI
does around it, namely the order of init/plan/apply/destroy, the GCS state backend, the
variables file, the exit codes, and deleting the master and the agents by label before
`destroy`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.controlplane.test_tls import self_signed
from tests.support.fake_gce import FakeGCE
from tests.support.fake_gcs import FakeGCS

PROJECT, ZONE = "my-project-1", "us-west1-b"
STATE = f"c1-{PROJECT}-tfstate"
PASSWORD = "s3cret-Pa55"
WHEEL = "resolute-0.1.0-py3-none-any.whl"
FAKE_TERRAFORM = Path(__file__).with_name("fake_terraform.py")


@pytest.fixture
def gce() -> Iterator[FakeGCE]:
    with FakeGCE() as fake:
        yield fake


@pytest.fixture
def gcs() -> Iterator[FakeGCS]:
    fake = FakeGCS().start()
    yield fake
    fake.stop()


class Det:
    def __init__(self, tmp_path: Path, gce: FakeGCE, gcs: FakeGCS) -> None:
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        (self.bin / "terraform").symlink_to(FAKE_TERRAFORM)
        FAKE_TERRAFORM.chmod(0o755)
        self.log = tmp_path / "terraform-calls.jsonl"
        self.cwd = tmp_path / "empty"
        self.cwd.mkdir()
        self.wheel = tmp_path / WHEEL
        self.wheel.write_bytes(b"PK fake wheel")
        self.gce = gce
        query = urllib.parse.urlencode({"filter": "labels.resolute-cluster=c1"})
        self.env = {
            **os.environ,
            "PATH": f"{self.bin}:{os.environ['PATH']}",
            "STORAGE_EMULATOR_HOST": gcs.url,
            "FAKE_TF_LOG": str(self.log),
            "FAKE_TF_GCE_LIST": f"{gce.endpoint}/compute/v1/projects/{PROJECT}/zones/{ZONE}/"
            f"instances?{query}",
            "COLUMNS": "200",
        }

    def __call__(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "cli.main", "deploy", "gcp", *args]
        if args[0] in ("up", "down", "list") and "--dry-run" not in args:
            command += ["--compute-endpoint", self.gce.endpoint]
        if args[0] in ("up", "down") and "--dry-run" not in args:
            command += ["--poll-interval", "0.01"]
        return subprocess.run(
            command,
            cwd=self.cwd,
            env={**self.env, **(env or {}), "PYTHONPATH": str(Path(__file__).parents[3])},
            capture_output=True,
            text=True,
            timeout=120,
        )

    def calls(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def up(
        self, *extra: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return self(
            "up", "--cluster-id", "c1", "--project-id", PROJECT, "--wheel", str(self.wheel),
            "--db-password", PASSWORD, *extra, env=env,
        )  # fmt: skip


@pytest.fixture
def det(tmp_path: Path, gce: FakeGCE, gcs: FakeGCS) -> Det:
    return Det(tmp_path, gce, gcs)


def test_up_runs_init_plan_apply_with_the_state_in_the_cluster_bucket(
    det: Det, gcs: FakeGCS
) -> None:
    done = det.up("--max-dynamic-agents", "7")
    assert done.returncode == 0, done.stderr
    calls = det.calls()
    assert [c["args"][0] for c in calls] == ["init", "plan", "apply"]
    assert f"-backend-config=bucket={STATE}" in calls[0]["args"]
    assert "-backend-config=prefix=terraform/state" in calls[0]["args"]
    plan_file = next(a for a in calls[1]["args"] if a.startswith("-out="))[len("-out=") :]
    assert calls[2]["args"][-1] == plan_file
    assert "-var-file=terraform.tfvars.json" in calls[1]["args"]
    tfvars = calls[1]["tfvars"]
    assert tfvars["max_dynamic_agents"] == 7 and tfvars["resolute_wheel"] == WHEEL
    assert all(c["db_password"] == PASSWORD for c in calls)
    # The state bucket: private, versioned; it holds the wheel and the variables, no password.
    settings = gcs.bucket_settings[STATE]
    assert settings["iamConfiguration"]["uniformBucketLevelAccess"]["enabled"] is True
    assert settings["iamConfiguration"]["publicAccessPrevention"] == "enforced"
    assert settings["versioning"] == {"enabled": True}
    assert gcs.names(STATE) == ["terraform/terraform.tfvars.json", f"wheels/{WHEEL}"]
    stored = gcs.buckets[STATE]["terraform/terraform.tfvars.json"].data
    assert json.loads(stored) == tfvars
    assert PASSWORD.encode() not in stored
    assert "http://203.0.113.7:8080" in done.stdout


def test_up_propagates_terraforms_exit_code_and_stops(det: Det) -> None:
    done = det.up(env={"FAKE_TF_FAIL": "plan:3"})
    assert done.returncode == 3
    assert "terraform plan failed with exit code 3" in done.stderr
    assert [c["args"][0] for c in det.calls()] == ["init", "plan"]


def test_up_without_terraform_says_what_to_install_and_creates_nothing(
    det: Det, gcs: FakeGCS
) -> None:
    (det.bin / "terraform").unlink()
    done = det.up(env={"PATH": f"{det.bin}:/nonexistent"})
    assert done.returncode == 1
    assert "terraform was not found on PATH. Install Terraform" in done.stderr
    assert gcs.buckets == {} and gcs.requests == []


def test_dry_run_prints_variables_and_inventory_and_calls_nothing(
    det: Det, gce: FakeGCE, gcs: FakeGCS
) -> None:
    done = det("up", "--cluster-id", "c1", "--project-id", PROJECT, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert '"max_dynamic_agents": 5' in done.stdout
    assert "google_sql_database_instance.master" in done.stdout
    assert "c1-my-project-1-ckpt" in done.stdout
    assert "$" in done.stdout.split("Estimated cost")[1]
    assert det.calls() == [] and gcs.requests == [] and gce.requests == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cluster-id", "Bad/Name"], "--cluster-id 'Bad/Name'"),
        (["--cluster-id", "nul\x01x"], "--cluster-id"),
        (["--cluster-id", "c" * 23], "1-22 lowercase"),
        (["--preemption-enabled"], "--preemption-enabled needs --scheduler-type priority"),
        (["--inbound-cidr", "10.0.0.0/33"], "--inbound-cidr"),
        (["--zone", "europe-west4-a"], "is not in --region"),
        (["--add-label", "resolute-cluster=x"], "Resolute's own"),
        (["--min-dynamic-agents", "9"], "above --max-dynamic-agents"),
        (["--master-tls-cert", "/nonexistent.crt"], "go together"),
        (["--master-tls-cert", "/nonexistent.crt", "--master-tls-key", "/x.key"], "No such file"),
        (["--master-cert-name", "m.example"], "--master-cert-name needs --master-tls-cert"),
    ],
)
def test_bad_settings_get_a_clear_error_before_anything_is_called(
    det: Det, gcs: FakeGCS, args: list[str], message: str
) -> None:
    base = {"--cluster-id": "c1"}
    if "--cluster-id" in args:
        base = {}
    flat = [x for pair in base.items() for x in pair]
    done = det("up", *flat, "--project-id", PROJECT, *args, "--dry-run")
    assert done.returncode == 2
    assert message in done.stderr
    assert det.calls() == [] and gcs.requests == []


def _planted_cluster(det: Det, gce: FakeGCE) -> None:
    assert det.up().returncode == 0
    det.log.unlink()
    gce.create_instance(
        "c1-master", project=PROJECT, zone=ZONE,
        labels={"resolute-cluster": "c1", "resolute-role": "master"},
    )  # fmt: skip
    for name in ("c1-agent-gpu-a-00001", "c1-agent-aux-b-00001"):
        gce.create_instance(
            name, project=PROJECT, zone=ZONE,
            labels={"resolute-cluster": "c1", "resolute-agents": "c1"},
        )  # fmt: skip
    gce.create_instance(
        "c2-agent-gpu-a-00001", project=PROJECT, zone=ZONE,
        labels={"resolute-cluster": "c2", "resolute-agents": "c2"},
    )  # fmt: skip


def test_down_from_an_empty_folder_deletes_master_and_agents_before_destroy(
    det: Det, gce: FakeGCE, gcs: FakeGCS
) -> None:
    _planted_cluster(det, gce)
    done = det("down", "--cluster-id", "c1", "--project-id", PROJECT, "--delete-data", "--yes")
    assert done.returncode == 0, done.stderr
    calls = det.calls()
    assert [c["args"][0] for c in calls] == ["init", "apply", "destroy"]
    assert f"-backend-config=bucket={STATE}" in calls[0]["args"]
    assert "-var=allow_data_deletion=true" in calls[1]["args"]
    assert "-var=allow_data_deletion=true" in calls[2]["args"]
    assert calls[2]["instances_at_destroy"] == 0
    assert calls[0]["tfvars"]["cluster_id"] == "c1"  # from the state bucket, not a local file
    deletes = [r.path.rsplit("/", 1)[1] for r in gce.requests if r.method == "DELETE"]
    assert deletes[0] == "c1-master"
    assert sorted(deletes[1:]) == ["c1-agent-aux-b-00001", "c1-agent-gpu-a-00001"]
    assert [i["name"] for i in gce.instances()] == ["c2-agent-gpu-a-00001"]
    assert STATE not in gcs.buckets
    assert "nothing labelled resolute-cluster=c1 is left" in done.stdout


def test_down_refuses_without_delete_data_and_touches_nothing(det: Det, gce: FakeGCE) -> None:
    _planted_cluster(det, gce)
    done = det("down", "--cluster-id", "c1", "--project-id", PROJECT, "--yes")
    assert done.returncode == 2
    assert "--delete-data" in done.stderr and "gcloud sql export" in done.stderr
    assert det.calls() == []
    assert not [r for r in gce.requests if r.method == "DELETE"]


def test_a_failed_destroy_keeps_the_state_bucket_and_returns_terraforms_code(
    det: Det, gce: FakeGCE, gcs: FakeGCS
) -> None:
    _planted_cluster(det, gce)
    done = det(
        "down", "--cluster-id", "c1", "--project-id", PROJECT, "--delete-data", "--yes",
        env={"FAKE_TF_FAIL": "destroy:5"},
    )  # fmt: skip
    assert done.returncode == 5
    assert "terraform destroy failed with exit code 5" in done.stderr
    assert STATE in gcs.buckets


def test_down_of_an_unknown_cluster_says_so(det: Det) -> None:
    done = det("down", "--cluster-id", "nope", "--project-id", PROJECT, "--delete-data", "--yes")
    assert done.returncode == 1
    assert "no cluster 'nope' in project my-project-1" in done.stderr
    assert det.calls() == []


def test_list_finds_clusters_by_their_masters_label_in_every_zone(det: Det, gce: FakeGCE) -> None:
    for cluster, zone in (("c1", ZONE), ("c2", "europe-west4-a")):
        gce.create_instance(
            f"{cluster}-master", project=PROJECT, zone=zone,
            labels={"resolute-cluster": cluster, "resolute-role": "master"},
        )  # fmt: skip
    gce.create_instance("unrelated", project=PROJECT, zone=ZONE, labels={"team": "x"})
    done = det("list", "--project-id", PROJECT, "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [(r["cluster_id"], r["zone"], r["master"]) for r in rows] == [
        ("c2", "europe-west4-a", "c2-master"),
        ("c1", ZONE, "c1-master"),
    ]


def test_dump_master_config_template_prints_the_template(det: Det) -> None:
    done = det("dump-master-config-template")
    assert done.returncode == 0
    assert "type: gcs" in done.stdout and "${bucket}" in done.stdout


def test_a_refused_compute_call_is_one_clear_line(det: Det, gce: FakeGCE) -> None:
    gce.fail_next_call(403, "forbidden", "Required 'compute.instances.list' permission")
    done = det("list", "--project-id", PROJECT)
    assert done.returncode == 1
    assert "compute.instances.list" in done.stderr and "Traceback" not in done.stderr


def test_a_refused_storage_call_stops_up_before_terraform(det: Det, gcs: FakeGCS) -> None:
    gcs.fail_next(1, 403)
    done = det.up()
    assert done.returncode == 1
    assert f"gs://{STATE}" in done.stderr and "Traceback" not in done.stderr
    assert det.calls() == []


def test_a_second_up_updates_in_place_with_the_new_variables(det: Det, gcs: FakeGCS) -> None:
    assert det.up().returncode == 0
    done = det.up("--max-dynamic-agents", "9")
    assert done.returncode == 0, done.stderr
    assert "Created the state bucket" not in done.stdout
    inserts = [
        p for method, p in gcs.requests if method == "POST" and p.split("?")[0] == "/storage/v1/b"
    ]
    assert len(inserts) == 1
    calls = det.calls()
    assert [c["args"][0] for c in calls] == ["init", "plan", "apply"] * 2
    assert calls[4]["tfvars"]["max_dynamic_agents"] == 9
    stored = json.loads(gcs.buckets[STATE]["terraform/terraform.tfvars.json"].data)
    assert stored["max_dynamic_agents"] == 9


def test_up_with_tls_hands_the_pair_to_terraform_through_the_environment_only(
    det: Det, gcs: FakeGCS, tmp_path: Path
) -> None:
    cert, key = self_signed(tmp_path)
    done = det.up(
        "--master-tls-cert", str(cert), "--master-tls-key", str(key),
        "--master-cert-name", "master.example",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    calls = det.calls()
    assert all(c["master_tls_cert"] == cert.read_text() for c in calls)
    assert all(c["master_tls_key"] == key.read_text() for c in calls)
    tfvars = calls[1]["tfvars"]
    assert tfvars["master_tls"] is True and tfvars["master_cert_name"] == "master.example"
    assert "master_tls_key" not in tfvars and "master_tls_cert" not in tfvars
    stored = gcs.buckets[STATE]["terraform/terraform.tfvars.json"].data
    assert b"PRIVATE KEY" not in stored and b"BEGIN CERTIFICATE" not in stored


def test_down_names_a_checkpoint_bucket_left_after_destroy_and_keeps_the_state(
    det: Det, gce: FakeGCE, gcs: FakeGCS
) -> None:
    _planted_cluster(det, gce)
    gcs.create_bucket("c1-my-project-1-ckpt")  # destroy (a fake here) did not remove it
    gce.create_instance(
        "c1-stray", project=PROJECT, zone="us-west1-c", labels={"resolute-cluster": "c1"}
    )
    done = det("down", "--cluster-id", "c1", "--project-id", PROJECT, "--delete-data", "--yes")
    assert done.returncode != 0
    assert "bucket gs://c1-my-project-1-ckpt" in done.stderr
    assert "instance c1-stray (us-west1-c" in done.stderr
    assert STATE in gcs.buckets  # kept, so that down can run again
