"""`decide_csrf`: which cookie-authenticated requests may write (a table)."""

from __future__ import annotations

import pytest

from controlplane.domain.csrf import CsrfEvidence, decide_csrf

HOST = "127.0.0.1:8080"
OWN = "http://127.0.0.1:8080"


def ev(method: str = "POST", csrf: str | None = "1", **kw: str | None) -> CsrfEvidence:
    base: dict[str, str | None] = {"scheme": "http", "host": HOST}
    base.update(kw)
    return CsrfEvidence(method=method, csrf_header=csrf, **base)  # type: ignore[arg-type]


ALLOWED = [
    ("reads need nothing", ev("GET", csrf=None)),
    ("HEAD needs nothing", ev("HEAD", csrf=None, origin="https://evil.example")),
    ("OPTIONS needs nothing", ev("OPTIONS", csrf=None)),
    ("the UI's own POST", ev(origin=OWN)),
    ("the UI's own DELETE", ev("DELETE", origin=OWN)),
    ("lowercase method and host", ev("patch", origin="HTTP://127.0.0.1:8080")),
    ("no Origin, same-origin fetch", ev(sec_fetch_site="same-origin")),
    ("no Origin, no fetch metadata, own Referer", ev(referer=OWN + "/det/experiments/3")),
    ("https front end, master sees http", ev(origin="https://127.0.0.1:8080")),
    (
        "default port omitted by the browser",
        ev(host="master.example", origin="http://master.example"),
    ),
    ("default port written in Host", ev(host="master.example:80", origin="http://master.example")),
    ("tls master", ev(scheme="https", host="m.example", origin="https://m.example:443")),
]

REFUSED = [
    ("no CSRF header", ev(csrf=None, origin=OWN), "X-Resolute-CSRF"),
    ("wrong CSRF header", ev(csrf="yes", origin=OWN), "X-Resolute-CSRF"),
    ("foreign Origin", ev(origin="https://evil.example"), "Origin"),
    ("same host, other port", ev(origin="http://127.0.0.1:9999"), "Origin"),
    ("opaque Origin (sandboxed page)", ev(origin="null"), "opaque"),
    ("http page to an https master", ev(scheme="https", origin=OWN), "Origin"),
    ("not a web origin", ev(origin="file://"), "Origin"),
    ("cross-site fetch metadata", ev(sec_fetch_site="cross-site"), "Sec-Fetch-Site"),
    ("same-site is not same-origin", ev(sec_fetch_site="same-site"), "Sec-Fetch-Site"),
    ("foreign Referer", ev(referer="https://evil.example/x"), "Referer"),
    ("nothing to tell the origin by", ev(), "no Origin"),
    ("no Host", ev(host=None, origin=OWN), "Host"),
    ("Origin wins over a same-origin Referer", ev(origin="https://e.x", referer=OWN), "Origin"),
]


@pytest.mark.parametrize(("case", "evidence"), ALLOWED, ids=[c for c, _ in ALLOWED])
def test_allowed(case: str, evidence: CsrfEvidence) -> None:
    assert decide_csrf(evidence).allowed, case


@pytest.mark.parametrize(("case", "evidence", "says"), REFUSED, ids=[c for c, _, _ in REFUSED])
def test_refused(case: str, evidence: CsrfEvidence, says: str) -> None:
    decision = decide_csrf(evidence)
    assert not decision.allowed, case
    assert says in decision.reason and decision.reason.startswith("refused a cookie")
