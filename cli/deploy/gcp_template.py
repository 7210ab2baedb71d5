"""The master VM's start-up script and master config, rendered from terraform/gcp's templates.

Terraform renders `startup.sh.tftpl` and `master.yaml.tftpl` with `templatefile()`; this module
renders the same files for `--dry-run`, `dump-master-config-template` and the tests. The
templates use only the part of Terraform's template language both sides implement identically:
`${name}` of a variable of the map, `$${` for a literal `${` and `%%{` for a literal `%{`.
Anything else (an expression, a function call, a `%{` directive) is refused, so the two
renderings cannot drift apart unnoticed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

# A checkout's terraform/gcp; in an installed wheel the same tree is the data-only namespace
# package `terraform.gcp` beside `cli` (pyproject's package-data), so one path serves both.
TERRAFORM_DIR = Path(__file__).resolve().parents[2] / "terraform" / "gcp"
MASTER_MODULE = TERRAFORM_DIR / "modules" / "master"
STARTUP_TEMPLATE = MASTER_MODULE / "startup.sh.tftpl"
MASTER_CONFIG_TEMPLATE = MASTER_MODULE / "master.yaml.tftpl"

_TOKEN = re.compile(r"\$\$\{|%%\{|\$\{(?P<expr>[^}]*)\}|%\{")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")

TemplateValue = str | int | bool


class TemplateError(ValueError):
    """A template uses what only Terraform would render, or names a variable not given."""


def placeholders(template: str) -> set[str]:
    """The variable names a template interpolates."""
    names: set[str] = set()
    for match in _TOKEN.finditer(template):
        expr = match.group("expr")
        if expr is not None:
            names.add(_check_expr(expr.strip(), template, match.start()))
        elif match.group(0) == "%{":
            raise TemplateError(
                f"line {_line(template, match.start())}: %{{ directives are not used"
            )
    return names


def render(template: str, variables: Mapping[str, TemplateValue]) -> str:
    """What `templatefile()` makes of `template` with `variables`: one pass, no re-interpolation."""
    missing = placeholders(template) - set(variables)
    if missing:
        raise TemplateError(f"variables not given: {', '.join(sorted(missing))}")

    def substitute(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "$${":
            return "${"
        if token == "%%{":
            return "%{"
        return _text(variables[match.group("expr").strip()])

    return _TOKEN.sub(substitute, template)


def _text(value: TemplateValue) -> str:
    # Terraform writes booleans as true/false and whole numbers without a fraction.
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _check_expr(expr: str, template: str, offset: int) -> str:
    if not _NAME.fullmatch(expr):
        raise TemplateError(
            f"line {_line(template, offset)}: ${{{expr}}} is not a plain variable; the templates "
            "may only interpolate names (write $${ for a literal ${)"
        )
    return expr


def _line(template: str, offset: int) -> int:
    return template.count("\n", 0, offset) + 1


def render_master_config(variables: Mapping[str, TemplateValue]) -> str:
    return render(MASTER_CONFIG_TEMPLATE.read_text(), variables)


def render_startup_script(
    startup_variables: Mapping[str, TemplateValue],
    master_config_variables: Mapping[str, TemplateValue],
) -> str:
    """The whole start-up script, as modules/master/main.tf nests the two templates."""
    nested = {**startup_variables, "master_config": render_master_config(master_config_variables)}
    return render(STARTUP_TEMPLATE.read_text(), nested)
