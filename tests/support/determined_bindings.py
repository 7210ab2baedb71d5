"""The REST endpoints of the installed real client (`determined==0.38.1`'s generated
`bindings.py`), read from its source: every `session._do_request(method=…, path=…)` call.

`python -m tests.support.determined_bindings URL` prints how many a running master serves."""

from __future__ import annotations

import ast
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Endpoint:
    name: str  # the binding, e.g. "post_ActivateExperiment"
    method: str
    template: str  # "/api/v1/experiments/{id}/activate"

    def path(self, value: str = "1") -> str:
        """The path with every parameter set to `value` (ids are the commonest parameter)."""
        out, depth = [], 0
        for char in self.template:
            if char == "{":
                depth += 1
                if depth == 1:
                    out.append(value)
            elif char == "}":
                depth -= 1
            elif depth == 0:
                out.append(char)
        return "".join(out)


def bindings_file(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages/determined/common/api/bindings.py"))
    if not found:
        raise FileNotFoundError(f"no determined bindings.py under {venv}")
    return found[0]


def endpoints(source: str) -> list[Endpoint]:
    found: list[Endpoint] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        tree = ast.parse(source)
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "_do_request"):
                continue
            kw = {k.arg: k.value for k in node.keywords}
            method, path = kw["method"], kw["path"]
            assert isinstance(method, ast.Constant), fn.name
            found.append(Endpoint(fn.name, str(method.value), _template(path)))
    return found


def _template(node: ast.expr) -> str:
    if isinstance(node, ast.Constant):
        return str(node.value)
    assert isinstance(node, ast.JoinedStr)
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
        else:
            assert isinstance(value, ast.FormattedValue)
            parts.append("{" + ast.unparse(value.value) + "}")
    return "".join(parts)


def main(url: str, token: str) -> None:
    import httpx

    from tests.compat.conftest import det_venv

    venv = det_venv()
    assert venv is not None
    ends = endpoints(bindings_file(venv).read_text())
    missing = [e for e in ends if unserved(httpx.Client(base_url=url), e, token)]
    print(f"served {len(ends) - len(missing)} / {len(ends)}")
    for e in missing:
        print(f"  {e.method} {e.template}  ({e.name})")


def unserved(client: object, endpoint: Endpoint, token: str) -> bool:
    """Whether the master answers `endpoint` with "no such endpoint" (no route) or 405 (a
    route for another method). Any other answer, errors included, means a handler exists."""
    import httpx

    assert isinstance(client, httpx.Client)
    kwargs: dict[str, object] = {"headers": {"Authorization": f"Bearer {token}"}, "timeout": 10}
    if endpoint.method in ("POST", "PUT", "PATCH"):
        kwargs["json"] = {}
    try:
        reply = client.request(endpoint.method, endpoint.path(), **kwargs)  # type: ignore[arg-type]
    except httpx.ReadTimeout:
        return False  # a stream that stays open is served
    if reply.status_code == 405:
        return True
    if reply.status_code != 404:
        return False
    try:
        return reply.json().get("message") == "no such endpoint"
    except ValueError:
        return False


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
