"""terraform/gcp read with python-hcl2, for the structural tests.

`terraform validate` and `terraform plan` cannot run on our machines (no provider can be
fetched), so what they would check about the wiring between modules is checked here: which
variables, outputs, locals and resources each module declares, and what it references.
python-hcl2 8.x keeps HCL's quotes in block labels and string values; `unquote` drops them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hcl2

from cli.deploy.gcp_template import TERRAFORM_DIR

# Arguments of a module block that are Terraform's own, not the module's variables.
META_ARGUMENTS = {"source", "version", "count", "for_each", "providers", "depends_on"}
_REFERENCE = re.compile(r"\b(var|local|module)\.([A-Za-z_][A-Za-z0-9_-]*)(?:\.([A-Za-z_][\w-]*))?")


def unquote(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def parse(path: Path) -> dict[str, Any]:
    with path.open() as f:
        return hcl2.load(f)


@dataclass
class Module:
    path: Path
    variables: dict[str, dict[str, Any]] = field(default_factory=dict)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    locals: dict[str, Any] = field(default_factory=dict)
    resources: set[str] = field(default_factory=set)
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    blocks: list[dict[str, Any]] = field(default_factory=list)

    def references(self, kind: str) -> set[str]:
        return {m[1] for m in _matches(self.blocks) if m[0] == kind}

    def module_outputs_used(self) -> set[tuple[str, str]]:
        return {(m[1], m[2]) for m in _matches(self.blocks) if m[0] == "module" and m[2]}


def load_module(path: Path) -> Module:
    module = Module(path)
    for tf in sorted(path.glob("*.tf")):
        doc = parse(tf)
        module.blocks.append(doc)
        for block in doc.get("variable", []):
            for name, body in block.items():
                module.variables[unquote(name)] = body
        for block in doc.get("output", []):
            for name, body in block.items():
                module.outputs[unquote(name)] = body
        for block in doc.get("locals", []):
            module.locals.update({k: v for k, v in block.items() if k != "__is_block__"})
        for block in doc.get("resource", []):
            for kind, named in block.items():
                for name in named:
                    module.resources.add(f"{unquote(kind)}.{unquote(name)}")
        for block in doc.get("module", []):
            for name, body in block.items():
                module.calls[unquote(name)] = body
    return module


def all_modules() -> dict[str, Module]:
    """The root module as "root", and each submodule by its folder name."""
    modules = {"root": load_module(TERRAFORM_DIR)}
    for folder in sorted((TERRAFORM_DIR / "modules").iterdir()):
        if folder.is_dir():
            modules[folder.name] = load_module(folder)
    return modules


def tf_files() -> list[Path]:
    return sorted(TERRAFORM_DIR.rglob("*.tf"))


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


def _matches(node: Any) -> Iterator[tuple[str, str, str | None]]:
    for text in _strings(node):
        for match in _REFERENCE.finditer(text):
            yield match[1], match[2], match[3]
