"""The charts' pure decisions (webui/src/chartdata.ts, formatting.ts), run in node: which
lines and panels a metric chart draws, which points get a marker, log-scale gaps, ranges for a
single point, ticks, and how numbers and column names read."""

from __future__ import annotations

import itertools
import json
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
ESBUILD = ROOT / "webui" / "node_modules" / ".bin" / "esbuild"

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="no node on this machine"),
    pytest.mark.skipif(not ESBUILD.exists(), reason="webui/node_modules missing"),
]

DRIVER = """
import * as cd from "./chartdata.js";
import * as fmt from "./formatting.js";
const fns = { ...cd, ...fmt };
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const out = JSON.parse(input).map(([name, args]) => fns[name](...args));
  process.stdout.write(JSON.stringify(out));
});
"""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("charts-js")
    src = ROOT / "webui" / "src"
    subprocess.run(
        [
            str(ESBUILD),
            str(src / "chartdata.ts"),
            str(src / "formatting.ts"),
            "--format=esm",
            f"--outdir={out}",
            "--log-level=warning",
        ],
        check=True,
    )
    (out / "package.json").write_text('{"type": "module"}')
    (out / "driver.js").write_text(DRIVER)
    return out


def call(bundle: Path, *calls: tuple[str, list[Any]]) -> list[Any]:
    done = subprocess.run(
        ["node", str(bundle / "driver.js")],
        input=json.dumps([[n, a] for n, a in calls]),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def one(bundle: Path, name: str, *args: Any) -> Any:
    return call(bundle, (name, list(args)))[0]


def _pt(batches: int, values: dict, epoch: float | None = None, time: str = "") -> dict:
    return {"batches": batches, "time": time, "epoch": epoch, "values": values}


# The digits example's training group: `batches` in the hundreds beside a loss below 1.
DIGITS = [
    {
        "trialId": 7,
        "points": [
            _pt(100, {"loss": 0.9, "accuracy": 0.5, "batches": 100}, 1.0),
            _pt(200, {"loss": 0.4, "accuracy": 0.8, "batches": 200}, 2.0),
        ],
    },
]


def test_metric_names_leave_epoch_out(bundle: Path) -> None:
    pts = [{"trialId": 1, "points": [_pt(1, {"epoch": 1, "loss": 1, "acc": 0})]}]
    assert one(bundle, "metricNames", pts) == ["acc", "loss"]


def test_a_plot_per_metric_gives_each_its_own_axis(bundle: Path) -> None:
    lines = one(bundle, "linesOf", DIGITS, ["loss", "accuracy", "batches"], "batches")
    assert [line["label"] for line in lines] == [
        "trial 7 accuracy",
        "trial 7 batches",
        "trial 7 loss",
    ]
    panels = one(bundle, "panelsOf", lines, "metric", "training")
    assert [(p["key"], p["yLabel"], len(p["lines"])) for p in panels] == [
        ("accuracy", "accuracy", 1),
        ("batches", "batches", 1),
        ("loss", "loss", 1),
    ]
    shared = one(bundle, "panelsOf", lines, "shared", "training")
    assert [(p["key"], len(p["lines"])) for p in shared] == [("all", 3)]
    assert one(bundle, "panelsOf", [], "shared", "training") == []


def test_the_picker_draws_only_the_chosen_metrics(bundle: Path) -> None:
    lines = one(bundle, "linesOf", DIGITS, ["loss"], "batches")
    assert [(line["metric"], line["x"], line["y"]) for line in lines] == [
        ("loss", [100, 200], [0.9, 0.4])
    ]


@pytest.mark.parametrize(
    ("axis", "want_x"),
    [
        ("batches", [10, 20, 30]),
        ("epochs", [0.5, 1.0]),  # the point without an epoch has no place on this x
        ("time", [1_700_000_000.0, 1_700_000_060.5, 1_700_000_120.0]),
    ],
)
def test_x_by_batches_epochs_or_time(bundle: Path, axis: str, want_x: list[float]) -> None:
    trial = {
        "trialId": 1,
        "points": [
            _pt(10, {"loss": 3}, 0.5, "2023-11-14T22:13:20.000Z"),
            _pt(20, {"loss": 2, "epoch": 1.0}, None, "2023-11-14T22:14:20.500Z"),
            _pt(30, {"loss": 1}, None, "2023-11-14T22:15:20.000Z"),
        ],
    }
    [line] = one(bundle, "linesOf", [trial], ["loss"], axis)
    assert line["x"] == want_x
    assert one(bundle, "hasEpochs", [trial]) is True
    assert one(bundle, "hasEpochs", [{"trialId": 1, "points": [_pt(1, {"loss": 1})]}]) is False


def test_a_non_numeric_value_is_a_gap(bundle: Path) -> None:
    trial = {"trialId": 1, "points": [_pt(1, {"loss": "NaN"}), _pt(2, {"loss": 2})]}
    [line] = one(bundle, "linesOf", [trial], ["loss"], "batches")
    assert line["y"] == [None, 2]


@pytest.mark.parametrize(
    ("y", "want"),
    [
        ([None, 0.5, None], [1]),  # a single validation point: drawn as a marker
        ([1, 2, 3], [0, 1, 2]),  # sparse: every point marked
        ([None] * 4, []),
        ([float(i) for i in range(61)], []),  # dense: the line is the reading
    ],
)
def test_markers(bundle: Path, y: list[float | None], want: list[int]) -> None:
    assert one(bundle, "markerIndices", y) == want


def test_log_scale_leaves_out_zero_and_negatives_and_counts_them(bundle: Path) -> None:
    assert one(bundle, "forLog", [1, 0, -2, None, 0.5]) == {
        "y": [1, None, None, None, 0.5],
        "dropped": 2,
    }


@pytest.mark.parametrize(
    ("v", "log", "time", "want"),
    [
        (0.25, False, False, [0.125, 0.375]),
        (0, False, False, [-1, 1]),
        (-4, False, False, [-6, -2]),
        (0.01, True, False, [0.001, 0.1]),
        (100, False, True, [40, 160]),
        (None, False, False, [0, 1]),
        (None, True, False, [1, 10]),
    ],
)
def test_a_single_value_gets_a_range_around_it(
    bundle: Path, v: float | None, log: bool, time: bool, want: list[float]
) -> None:
    got = one(bundle, "degenerateRange", v, log, time)
    assert got == pytest.approx(want)


@pytest.mark.parametrize(
    ("available", "panels", "want"), [(1248, 3, 616), (900, 3, 900), (1248, 1, 1248), (100, 2, 240)]
)
def test_panel_width_fits_the_page(bundle: Path, available: int, panels: int, want: int) -> None:
    assert one(bundle, "panelWidth", available, panels) == want


@pytest.mark.parametrize(
    ("lo", "hi", "want"),
    [(0, 1, [0, 0.2, 0.4, 0.6, 0.8, 1]), (0.013, 0.087, [0.02, 0.04, 0.06, 0.08]), (5, 5, [5])],
)
def test_ticks(bundle: Path, lo: float, hi: float, want: list[float]) -> None:
    assert one(bundle, "ticks", lo, hi, 5) == want


def test_log_ticks_and_when_a_log_axis_is_wanted(bundle: Path) -> None:
    assert one(bundle, "logTicks", 0.0005, 0.2) == [0.001, 0.01, 0.1]
    assert call(
        bundle,
        ("wantsLog", [[0.1, 0.01, 0.001]]),
        ("wantsLog", [[1, 2, 3]]),
        ("wantsLog", [[0, 1, 1000]]),
    ) == [True, False, False]


# Node starts once per example: each example is a batch of ranges.
RANGES = st.tuples(
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    st.floats(1e-6, 1e6, allow_nan=False, allow_infinity=False),
).filter(lambda r: r[1] >= 1e-6 * max(1.0, abs(r[0])))


@given(st.lists(RANGES, min_size=20, max_size=20))
@settings(max_examples=4, deadline=None)
def test_ticks_are_round_evenly_spaced_and_inside(
    bundle: Path, ranges: list[tuple[float, float]]
) -> None:
    got = call(bundle, *[("ticks", [lo, lo + width, 5]) for lo, width in ranges])
    for (lo, width), ts in zip(ranges, got, strict=True):
        hi = lo + width
        assert 2 <= len(ts) <= 11
        slack = width * 1e-6
        assert all(lo - slack <= t <= hi + slack for t in ts)
        steps = [b - a for a, b in itertools.pairwise(ts)]
        assert max(steps) == pytest.approx(min(steps), rel=1e-3)
        mant = steps[0] / 10 ** math.floor(math.log10(steps[0]))
        assert min(abs(mant - m) for m in (1, 2, 5, 10)) < 1e-3


@pytest.mark.parametrize(
    ("label", "n", "want"), [("0.0625–0.125", 20, "0.0625–0.125"), ("0.0625–0.125", 6, "0.062…")]
)
def test_fit_label(bundle: Path, label: str, n: int, want: str) -> None:
    assert one(bundle, "fitLabel", label, n) == want


@pytest.mark.parametrize(
    ("n", "want"),
    [
        (0.1 + 0.2, "0.3"),
        (0.123456789, "0.1235"),
        (32, "32"),
        (0, "0"),
        (1e-5, "1e-5"),
        (0.00012346, "1.235e-4"),
        (2.5e7 + 0.5, "2.5e7"),
        (-3.14159, "-3.142"),
        (1234.5678, "1235"),
    ],
)
def test_format_number(bundle: Path, n: float, want: str) -> None:
    assert one(bundle, "formatNumber", n) == want


@given(
    st.lists(
        # Below the largest double: 1.7975e308 rounded to four digits is past it.
        st.floats(-1e300, 1e300).filter(lambda f: f != 0),
        min_size=20,
        max_size=20,
    )
)
@settings(max_examples=4, deadline=None)
def test_format_number_keeps_four_significant_digits(bundle: Path, ns: list[float]) -> None:
    for n, text in zip(ns, call(bundle, *[("formatNumber", [n]) for n in ns]), strict=True):
        # Integers are shown whole (batches, layers); anything else is at most "-1.235e-100".
        assert n == int(n) or len(text) <= 11, text
        assert float(text) == pytest.approx(n, rel=6e-4)


def test_hyperparameters_flatten_and_format(bundle: Path) -> None:
    hp = {"optimizer": {"lr": 0.0001, "name": "adam"}, "layers": 3, "dropout": 0.30000000000000004}
    assert one(bundle, "flattenHparams", hp) == [
        ["dropout", 0.30000000000000004],
        ["layers", 3],
        ["optimizer.lr", 0.0001],
        ["optimizer.name", "adam"],
    ]
    assert call(
        bundle,
        ("formatValue", [0.30000000000000004]),
        ("formatValue", [[0.1, "a"]]),
        ("formatValue", [None]),
        ("formatValue", [True]),
    ) == ["0.3", "[0.1, a]", "—", "true"]


@pytest.mark.parametrize(
    ("column", "display", "want"),
    [
        ("searcherType", None, "Searcher"),
        ("numTrials", None, "Trials"),
        ("id", None, "ID"),
        ("searcherMetricsVal", None, "Searcher metric value"),
        ("someNewColumn", None, "Some new column"),
        ("total_batches", None, "Total batches"),
        ("hp.optimizer.lr", "optimizer.lr", "hp.optimizer.lr"),
        ("validation.val_loss", "val_loss", "validation.val_loss"),
        ("checkpointURL", None, "Checkpoint URL"),
    ],
)
def test_column_headers_are_not_camel_case(
    bundle: Path, column: str, display: str | None, want: str
) -> None:
    assert one(bundle, "columnHeader", column, display) == want
