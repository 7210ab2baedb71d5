"""terraform/gcp, checked structurally: `terraform validate` and `terraform plan` cannot run here.

No Terraform provider can be fetched on our machines, so these tests do by parsing (python-hcl2)
what `validate` would: every file parses, each module call passes exactly variables the module
declares and every variable it requires, every `module.X.Y` names an output X declares, every
`var.`/`local.` reference resolves, providers are pinned. They also keep the CLI equal to the
modules: its variables file, the names it derives, its dry-run inventory.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cli.deploy.gcp_config import SECRET_VARIABLES, GcpDeployment
from cli.deploy.gcp_inventory import inventory
from cli.deploy.gcp_template import TERRAFORM_DIR
from tests.terraform.gcp.hcl import META_ARGUMENTS, all_modules, parse, tf_files, unquote

MODULES = all_modules()
ROOT = MODULES["root"]
SUBMODULES = sorted(name for name in MODULES if name != "root")


def deployment(**overrides: object) -> GcpDeployment:
    settings: dict[str, object] = {
        "cluster_id": "c1",
        "project_id": "my-project-1",
        "resolute_wheel": "resolute-0.1.0-py3-none-any.whl",
        "resolute_version": "0.1.0",
    }
    settings.update(overrides)
    return GcpDeployment(**settings)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", tf_files(), ids=lambda p: str(p.relative_to(TERRAFORM_DIR)))
def test_every_file_parses_with_python_hcl2(path: Path) -> None:
    assert isinstance(parse(path), dict)


def test_the_root_calls_every_submodule_from_its_folder() -> None:
    sources = {name: unquote(call["source"]) for name, call in ROOT.calls.items()}
    assert sources == {name: f"./modules/{name}" for name in SUBMODULES}


@pytest.mark.parametrize("name", SUBMODULES)
def test_each_call_passes_exactly_declared_variables_and_all_required_ones(name: str) -> None:
    passed = set(ROOT.calls[name]) - META_ARGUMENTS - {"__is_block__"}
    declared = set(MODULES[name].variables)
    required = {v for v, body in MODULES[name].variables.items() if "default" not in body}
    assert passed - declared == set(), "passed but not declared by the module"
    assert required - passed == set(), "required by the module but not passed"


def test_every_module_output_the_root_uses_exists() -> None:
    used = ROOT.module_outputs_used()
    assert used, "the root wires modules together through outputs"
    missing = {(m, o) for m, o in used if o not in MODULES[m].outputs}
    assert missing == set()


@pytest.mark.parametrize("name", sorted(MODULES))
def test_variables_and_locals_referenced_are_declared_and_all_variables_used(name: str) -> None:
    module = MODULES[name]
    assert module.references("var") - set(module.variables) == set()
    assert module.references("local") - set(module.locals) == set()
    assert set(module.variables) - module.references("var") == set(), "declared but unused"


def test_providers_are_pinned_to_exact_versions_and_state_goes_to_gcs() -> None:
    (terraform,) = parse(TERRAFORM_DIR / "versions.tf")["terraform"]
    (providers,) = terraform["required_providers"]
    providers = {k: v for k, v in providers.items() if k != "__is_block__"}
    assert set(providers) == {"google", "random"}
    for spec in providers.values():
        assert re.fullmatch(r"= \d+\.\d+\.\d+", unquote(spec["version"])), spec
    backends = [unquote(k) for b in terraform["backend"] for k in b if k != "__is_block__"]
    assert backends == ["gcs"]


def test_only_the_root_configures_providers() -> None:
    for name in SUBMODULES:
        assert not any("provider" in block for block in MODULES[name].blocks), name


def test_the_cli_variables_are_exactly_the_root_variables() -> None:
    written = set(deployment().tfvars())
    assert written | SECRET_VARIABLES == set(ROOT.variables)
    assert written & SECRET_VARIABLES == set()
    for secret in SECRET_VARIABLES:
        assert ROOT.variables[secret].get("sensitive") is True


def _evaluate(expression: str, d: GcpDeployment) -> str:
    """A root local made only of text and ${var.x}, as Terraform would compute it."""
    values = d.tfvars()
    return re.sub(r"\$\{var\.(\w+)\}", lambda m: str(values[m[1]]), unquote(expression))


@pytest.mark.parametrize(
    ("local", "attribute"),
    [
        ("bucket_name", "checkpoint_bucket"),
        ("master_name", "master_name"),
        ("agent_prefix", "agent_prefix"),
        ("db_secret_id", "db_secret_id"),
    ],
)
@pytest.mark.parametrize("cluster_id", ["c1", "a-very-long-cluster-22"])
def test_names_the_cli_derives_match_the_root_locals(
    local: str, attribute: str, cluster_id: str
) -> None:
    d = deployment(cluster_id=cluster_id)
    assert _evaluate(ROOT.locals[local], d) == getattr(d, attribute)


def test_derived_names_fit_gcp_limits_at_the_longest_ids() -> None:
    d = deployment(cluster_id="a" * 22, project_id="p" * 30)
    assert len(d.checkpoint_bucket) <= 63 and len(d.state_bucket) <= 63
    assert len(f"{d.cluster_id}-master") <= 30 and len(f"{d.cluster_id}-agent") <= 30


def test_the_dry_run_inventory_lists_every_resource_of_the_modules() -> None:
    in_modules = {(name, r) for name in SUBMODULES for r in MODULES[name].resources}
    listed = {(p.module, p.resource) for p in inventory(deployment(master_tls=True))}
    assert listed == in_modules
    # Without TLS, no secret is made for a certificate or key.
    plain = {p.module for p in inventory(deployment())}
    assert "tls_secret" not in plain
    # With an existing master service account, nothing is created for the master.
    bring_your_own = {p.resource for p in inventory(deployment(service_account_email="m@x.com"))}
    assert "google_service_account.master" not in bring_your_own
    assert "google_project_iam_custom_role.master" not in bring_your_own
    given = {p.resource for p in inventory(deployment(), password_given=True)}
    assert "random_password.db" not in given


def test_inbound_cidr_is_the_only_public_source_range() -> None:
    rules = MODULES["firewall"].blocks
    ranges = [
        body["source_ranges"]
        for doc in rules
        for block in doc.get("resource", [])
        for named in block.values()
        for body in named.values()
    ]
    assert sorted(map(str, ranges)) == sorted(
        ["['${var.inbound_cidr}']", "['${var.inbound_cidr}']", "['${var.subnetwork_cidr}']"]
    )


@pytest.mark.skipif(shutil.which("terraform") is None, reason="no terraform binary on PATH")
def test_terraform_fmt_is_clean_when_a_terraform_binary_exists() -> None:
    # fmt needs no provider, unlike validate and plan, which cannot run here.
    done = subprocess.run(
        ["terraform", "fmt", "-check", "-recursive", "-list=true", str(TERRAFORM_DIR)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _meta_arguments(module_name: str) -> list[str]:
    """The count and for_each expressions of a submodule's resources."""
    found = []
    for doc in MODULES[module_name].blocks:
        for block in doc.get("resource", []):
            for named in block.values():
                for body in named.values():
                    found += [body[k] for k in ("count", "for_each") if k in body]
    return found


@pytest.mark.parametrize("name", SUBMODULES)
def test_count_and_for_each_are_known_at_plan_and_not_sensitive(name: str) -> None:
    # Two errors only `terraform plan` would show: for_each over a set of values known only
    # after apply (a module output), and count or for_each derived from a sensitive variable.
    sensitive = {v for v, body in ROOT.variables.items() if body.get("sensitive") is True}
    for expression in _meta_arguments(name):
        for variable in re.findall(r"var\.(\w+)", expression):
            passed = str(ROOT.calls[name][variable])
            if "toset(" in expression or "[" in expression:
                assert "module." not in passed or passed.startswith("{"), (variable, passed)
            local = re.fullmatch(r"\$\{local\.(\w+)\}", passed)
            source = str(ROOT.locals[local[1]]) if local else passed
            if any(f"var.{s}" in source for s in sensitive):
                assert "nonsensitive(" in source, (variable, source)
