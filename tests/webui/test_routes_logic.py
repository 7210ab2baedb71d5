"""The pages' pure decisions, run in node on the UI's own modules (bundled by esbuild): which page
each of Determined 0.38's URLs opens (webui/src/routes.tsx, router.tsx's `compile`), which get
the 404 page, where Determined's old paths redirect; the profiler's series from its reports
(profiler.tsx) and historical usage's sums (clusterpages.tsx)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "webui" / "src"
ESBUILD = ROOT / "webui" / "node_modules" / ".bin" / "esbuild"

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="no node on this machine"),
    pytest.mark.skipif(not ESBUILD.exists(), reason="webui/node_modules missing"),
]

ENTRY = f"""
export {{ resolve }} from "{SRC / "routes.tsx"}";
export {{ profilerSeries }} from "{SRC / "profiler.tsx"}";
export {{ totals }} from "{SRC / "clusterpages.tsx"}";
"""

# The modules touch the browser's globals when they load (api.ts drops an old cookie): node gets
# stand-ins, then the bundle.
DRIVER = """
globalThis.document = { cookie: "" };
globalThis.localStorage = { getItem: () => null, setItem() {}, removeItem() {} };
const m = await import("./pages.js");
const fns = {
  resolve: (path) => {
    const found = m.resolve(path);
    if (!found) return null;
    const { route, params } = found;
    return [route.path, params, route.redirect ? route.redirect(params) : null];
  },
  profilerSeries: m.profilerSeries,
  totals: m.totals,
};
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const out = JSON.parse(input).map(([name, args]) => fns[name](...args));
  process.stdout.write(JSON.stringify(out));
});
"""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pages-js")
    (out / "entry.ts").write_text(ENTRY)
    subprocess.run(
        [
            str(ESBUILD),
            str(out / "entry.ts"),
            "--bundle",
            "--format=esm",
            "--jsx=automatic",
            "--jsx-import-source=preact",
            "--loader:.css=empty",
            f"--outfile={out / 'pages.js'}",
            "--resolve-extensions=.tsx,.ts,.js",
            "--log-level=warning",
        ],
        check=True,
        cwd=ROOT / "webui",
    )
    (out / "package.json").write_text('{"type": "module"}')
    (out / "driver.js").write_text(DRIVER)
    return out


def call(bundle: Path, *calls: tuple[str, list[Any]]) -> list[Any]:
    done = subprocess.run(
        ["node", str(bundle / "driver.js")],
        input=json.dumps(calls),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


T = "/experiments/:experimentId/trials/:trialId/:tab?"
E = "/experiments/:experimentId/:tab?/:viz?"

# Determined 0.38's routes (webui/react/src/routes/routes.ts) and the tabs under them, as a link
# would carry them: (path, the route that opens it, its parameters).
OPENS = [
    ("/dashboard", "/dashboard", {}),
    ("/workspaces", "/workspaces", {}),
    ("/workspaces/7", "/workspaces/:workspaceId/:tab?", {"workspaceId": "7"}),
    (
        "/workspaces/7/projects",
        "/workspaces/:workspaceId/:tab?",
        {"workspaceId": "7", "tab": "projects"},
    ),
    ("/projects/1", "/projects/:projectId/:tab?", {"projectId": "1"}),
    (
        "/projects/1/experiments",
        "/projects/:projectId/:tab?",
        {"projectId": "1", "tab": "experiments"},
    ),
    ("/experiments/3", E, {"experimentId": "3"}),
    ("/experiments/3/checkpoints", E, {"experimentId": "3", "tab": "checkpoints"}),
    (
        "/experiments/3/visualization/hp",
        E,
        {"experimentId": "3", "tab": "visualization", "viz": "hp"},
    ),
    ("/experiments/3/trials/4", T, {"experimentId": "3", "trialId": "4"}),
    ("/experiments/3/trials/4/logs", T, {"experimentId": "3", "trialId": "4", "tab": "logs"}),
    ("/experiments/3/trials/4/logs/", T, {"experimentId": "3", "trialId": "4", "tab": "logs"}),
    (
        "/experiments/3/trials/4/profiler",
        T,
        {"experimentId": "3", "trialId": "4", "tab": "profiler"},
    ),
    ("/trials/4", "/trials/:trialId/:tab?", {"trialId": "4"}),
    ("/trials/4/checkpoints", "/trials/:trialId/:tab?", {"trialId": "4", "tab": "checkpoints"}),
    ("/searches/5", "/searches/:searchId/:tab?", {"searchId": "5"}),
    ("/models", "/models", {}),
    ("/models/9", "/models/:modelId", {"modelId": "9"}),
    ("/models/my%20model", "/models/:modelId", {"modelId": "my model"}),
    (
        "/models/9/versions/2",
        "/models/:modelId/versions/:versionId/:tab?",
        {"modelId": "9", "versionId": "2"},
    ),
    ("/tasks", "/tasks", {}),
    (
        "/commands/ab-12/logs",
        "/:taskType/:taskId/logs",
        {"taskType": "commands", "taskId": "ab-12"},
    ),
    (
        "/notebooks/ab-12/logs",
        "/:taskType/:taskId/logs",
        {"taskType": "notebooks", "taskId": "ab-12"},
    ),
    ("/jobs", "/jobs", {}),
    ("/clusters", "/clusters/:tab?", {}),
    ("/clusters/historical-usage", "/clusters/:tab?", {"tab": "historical-usage"}),
    ("/resourcepool/gpu%20pool", "/resourcepool/:poolname/:tab?", {"poolname": "gpu pool"}),
    ("/templates", "/templates", {}),
    ("/webhooks", "/webhooks", {}),
    ("/admin/user-management", "/admin/:tab?", {"tab": "user-management"}),
    ("/admin/group-management", "/admin/:tab?", {"tab": "group-management"}),
    ("/compare", "/compare", {}),
]

# Determined's old paths: (path, where the UI sends it).
REDIRECTS = [
    ("/cluster", "/clusters"),
    ("/cluster/historical-usage", "/clusters/historical-usage"),
    ("/experiments", "/projects/1/experiments"),
]

# No page: the 404 page.
NOWHERE = [
    "/no/such/page",
    "/experiments/abc",
    "/experiments/0",
    "/experiments/-1",
    "/experiments/99999999999",
    "/experiments/3/trials/4/logs/extra",
    "/models/9/versions/x",
    "/foo/ab-12/logs",
    "/workspaces/1/projects/2",
    "/det/models",
]


def test_every_determined_route_opens_its_page(bundle: Path) -> None:
    got = call(bundle, *[("resolve", [path]) for path, _, _ in OPENS])
    assert [(g[0], g[1]) if g else None for g in got] == [(r, p) for _, r, p in OPENS]
    assert all(g[2] is None for g in got)


def test_old_paths_redirect_and_unknown_ones_get_the_404_page(bundle: Path) -> None:
    got = call(
        bundle, *[("resolve", [p]) for p, _ in REDIRECTS], *[("resolve", [p]) for p in NOWHERE]
    )
    assert [g[2] for g in got[: len(REDIRECTS)]] == [to for _, to in REDIRECTS]
    assert got[len(REDIRECTS) :] == [None] * len(NOWHERE)


@settings(max_examples=40, deadline=None)
@given(
    e=st.integers(1, 2**31 - 1),
    t=st.integers(1, 2**31 - 1),
    tab=st.sampled_from(["", "overview", "hyperparameters", "checkpoints", "logs", "profiler"]),
    name=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20).filter(
        lambda s: s.strip("/.") == s and "/" not in s
    ),
)
def test_ids_and_names_round_trip(bundle: Path, e: int, t: int, tab: str, name: str) -> None:
    trial = f"/experiments/{e}/trials/{t}" + (f"/{tab}" if tab else "")
    model = f"/models/{quote(name, safe='')}"
    got_trial, got_model = call(bundle, ("resolve", [trial]), ("resolve", [model]))
    want = {"experimentId": str(e), "trialId": str(t)} | ({"tab": tab} if tab else {})
    assert got_trial[:2] == [T, want]
    assert got_model[:2] == ["/models/:modelId", {"modelId": name}]


def _report(time: str, avg: dict[str, Any]) -> dict[str, Any]:
    return {"endTime": time, "metrics": {"avg_metrics": avg}}


T0, T1 = "2026-12-07T00:00:00.000Z", "2026-12-07T00:00:10.000Z"


@pytest.mark.parametrize(
    ("reports", "want"),
    [
        ([], []),
        # One agent: a series per metric, named by the metric, in name order.
        (
            [
                _report(T0, {"a1": {"util": 5, "mem": 1}}),
                _report(T1, {"a1": {"util": 7, "mem": 2}}),
            ],
            [("mem", [1, 2]), ("util", [5, 7])],
        ),
        # Two agents: named "agent metric"; a metric one report lacks, or a non-number, is a gap.
        (
            [
                _report(T0, {"a2": {"util": 1}, "a1": {"util": 2}}),
                _report(T1, {"a1": {"util": "n/a"}}),
            ],
            [("a1 util", [2, None]), ("a2 util", [1, None])],
        ),
        # A flat value (no agent level) is its own series.
        ([_report(T0, {"util": 3})], [("util", [3])]),
    ],
)
def test_profiler_series(bundle: Path, reports: list[dict], want: list[tuple]) -> None:
    (got,) = call(bundle, ("profilerSeries", [reports]))
    assert [(s["label"], s["y"]) for s in got] == [(label, y) for label, y in want]
    assert all(s["x"] == [1796601600 + 10 * i for i in range(len(reports))] for s in got)


def test_usage_totals_in_hours_largest_first(bundle: Path) -> None:
    entries = [
        {"byUsername": {"ann": 3600, "bob": 7200}, "byResourcePool": {"gpu": 10800}},
        {"byUsername": {"ann": 5400}, "byResourcePool": {"gpu": 3600, "cpu": 1800}},
        {"byUsername": {}, "byResourcePool": {}},
    ]
    users, pools = call(
        bundle, ("totals", [entries, "byUsername"]), ("totals", [entries, "byResourcePool"])
    )
    assert users == [["ann", 2.5], ["bob", 2.0]]
    assert pools == [["gpu", 4.0], ["cpu", 0.5]]
