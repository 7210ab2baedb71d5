"""Each page's first render in the web UI (issue 42: <= 500 ms on the local master).

A page's render is timed from the in-app navigation to it (the URL changes, as a click on a link
changes it) until its content is on screen: its rows, or its heading where the page has no rows.
That includes the page's API requests and the master's answers, not the one-time load of the
app's JavaScript (which the "initial JavaScript" row covers). Called by benchmarks/webui.py with
its seeded master, its browser page and the ids it made.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

TARGET_MS = 500
# The app's own navigation: what its links do (router.tsx's `navigate`).
_NAVIGATE = """path => {
  history.pushState(null, "", "/det" + path);
  window.dispatchEvent(new Event("resolute-nav"));
}"""


def routes(experiment: int, trial: int) -> list[tuple[str, str]]:
    """(path under /det, what shows the page's content) for every top-level page."""
    return [
        ("/dashboard", "#dashboard-title"),
        ("/workspaces", "#workspace-table [data-workspace-id]"),
        ("/workspaces/1", "#project-table [data-project-id]"),
        ("/projects/1/experiments", ".grid-body [data-exp-id]"),
        (f"/experiments/{experiment}", "#exp-name"),
        (f"/experiments/{experiment}/trials/{trial}", "#trial-state"),
        (f"/experiments/{experiment}/trials/{trial}/logs", "#log-lines"),
        ("/models", "#model-table"),
        ("/tasks", "#launch-title"),
        ("/clusters", "#cluster-title"),
        ("/clusters/historical-usage", "#usage-chart"),
        ("/templates", "#template-table"),
        ("/webhooks", "#webhook-table"),
        ("/admin/user-management", "#user-table tbody tr"),
        ("/no/such/page", "#not-found-title"),
    ]


async def page_renders(page: Any, pages: list[tuple[str, str]]) -> list[tuple[str, str, str, str]]:
    """Times each page twice (the first visit and a second one) and reports the slowest."""
    times: dict[str, float] = {}
    for _ in range(2):
        for path, shows in pages:
            # From another page, so the timed page starts from nothing of its own.
            away, away_shows = pages[0] if path != pages[0][0] else pages[1]
            await page.evaluate(_NAVIGATE, away)
            await page.wait_for_selector(away_shows)
            start = time.perf_counter()
            await page.evaluate(_NAVIGATE, path)
            await page.wait_for_selector(shows)
            ms = (time.perf_counter() - start) * 1000
            times[path] = max(times.get(path, 0.0), ms)
    worst = max(times, key=lambda k: times[k])
    return [
        (
            "page first render (slowest page)",
            f"{times[worst]:.0f} ms",
            f"{worst}; median of {len(times)} pages {statistics.median(times.values()):.0f} ms",
            "ok" if times[worst] <= TARGET_MS else "MISS",
        )
    ]
