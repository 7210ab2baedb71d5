"""cli.deploy.gcp_template renders the master's templates as Terraform's templatefile() does.

Terraform cannot run here, so the agreement rests on the templates using only the subset both
implement the same way (plain ${name}, $${ and %%{ escapes); the renderer refuses the rest, and
the maps the HCL passes name exactly the templates' placeholders.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.deploy.gcp_config import GcpDeployment
from cli.deploy.gcp_template import (
    MASTER_CONFIG_TEMPLATE,
    STARTUP_TEMPLATE,
    TemplateError,
    placeholders,
    render,
)
from tests.terraform.gcp.hcl import load_module


@pytest.mark.parametrize(
    ("template", "variables", "expected"),
    [
        ("a ${x} b", {"x": "1"}, "a 1 b"),
        ("${ x }", {"x": "v"}, "v"),
        ("$${x} stays", {}, "${x} stays"),
        ("%%{ if } stays", {}, "%{ if } stays"),
        ("$x and $ {x} are text", {}, "$x and $ {x} are text"),
        ("${flag} ${off} ${n}", {"flag": True, "off": False, "n": 8080}, "true false 8080"),
        ("${x}", {"x": "${y}"}, "${y}"),  # one pass: a value is never interpolated again
        ("$$${x}", {"x": "1"}, "$${x}"),
        ("${a-b}", {"a-b": "dash"}, "dash"),
    ],
)
def test_render_follows_templatefile(template: str, variables: dict, expected: str) -> None:
    assert render(template, variables) == expected


@pytest.mark.parametrize(
    ("template", "error"),
    [
        ("${x.y}", "not a plain variable"),
        ('${upper("a")}', "not a plain variable"),
        ("${x + 1}", "not a plain variable"),
        ("line\n%{ if x }y%{ endif }", "line 2: %{ directives"),
        ("${missing}", "variables not given: missing"),
    ],
)
def test_render_refuses_what_only_terraform_would_render(template: str, error: str) -> None:
    with pytest.raises(TemplateError, match=error.replace("{", r"\{").replace("+", r"\+")):
        render(template, {"x": "1"})


@given(st.text())
def test_escaped_text_renders_back_to_itself(text: str) -> None:
    escaped = text.replace("${", "$${").replace("%{", "%%{")
    assert render(escaped, {}) == text


def _hcl_map(name: str) -> set[str]:
    (module,) = [load_module(STARTUP_TEMPLATE.parent)]
    return {key for key in module.locals[name] if key != "__is_block__"}


def _deployment() -> GcpDeployment:
    return GcpDeployment(
        cluster_id="c1",
        project_id="my-project-1",
        resolute_wheel="resolute-0.1.0-py3-none-any.whl",
        resolute_version="0.1.0",
    )


def test_the_hcl_maps_python_and_the_templates_name_the_same_variables() -> None:
    d = _deployment()
    master_config = placeholders(MASTER_CONFIG_TEMPLATE.read_text())
    assert _hcl_map("master_config_vars") == master_config
    assert set(d.master_config_variables("10.0.0.3", "10.0.0.2")) == master_config
    startup = placeholders(STARTUP_TEMPLATE.read_text())
    assert _hcl_map("startup_vars") == startup
    assert set(d.startup_variables()) | {"master_config"} == startup


def test_the_hcl_maps_pass_each_variable_under_its_own_name() -> None:
    # Each value is `${var.<name>}` of the module variable that has the template's name, apart
    # from the two addresses, so Python's map (built from the same names) cannot differ.
    module = load_module(STARTUP_TEMPLATE.parent)
    renamed = {"master_internal_ip": "${var.internal_ip}"}
    for key, value in module.locals["master_config_vars"].items():
        if key != "__is_block__":
            assert value == renamed.get(key, f"${{var.{key}}}"), key
