"""POST /api/v1/preview-hp-search (Determined's PreviewHPSearch): what the experiment config's
search would run, as `det preview-search CONFIG` prints it. Any logged-in user may ask (it
reads nothing stored), as in Determined."""

from __future__ import annotations

from typing import Any

from litestar import post
from litestar.params import JSONBody
from pydantic import Field

from controlplane.api.deps import Caller
from controlplane.api.schemas.common import JsonConfigOrText, Wire
from controlplane.domain.errors import InvalidArgument
from controlplane.domain.initial_trials import MAX_SEED
from controlplane.domain.search_preview import Unit
from controlplane.services import search_preview


class PreviewHPSearchRequest(Wire):
    config: JsonConfigOrText | None = None
    seed: int = Field(0, ge=0, le=MAX_SEED)


class TrialSummaryOut(Wire):
    count: int
    unit: dict[str, Any]  # SearchUnit: name and value only where set, as protojson leaves them


def _unit(unit: Unit) -> dict[str, Any]:
    out: dict[str, Any] = {"maxLength": unit.max_length}
    if unit.name is not None:
        out["name"] = unit.name
    if unit.value is not None:
        out["value"] = unit.value
    return out


class SearchSummaryOut(Wire):
    config: dict[str, Any]
    trials: list[TrialSummaryOut]


class PreviewHPSearchResponse(Wire):
    summary: SearchSummaryOut


@post("/api/v1/preview-hp-search", status_code=200)
async def preview_hp_search(
    data: JSONBody[PreviewHPSearchRequest], principal: Caller
) -> PreviewHPSearchResponse:
    if not isinstance(data.config, dict):
        raise InvalidArgument("config must be an experiment config object")
    found = search_preview.preview(data.config, data.seed)
    return PreviewHPSearchResponse(
        summary=SearchSummaryOut(
            config=found.searcher,
            trials=[TrialSummaryOut(count=t.count, unit=_unit(t.unit)) for t in found.trials],
        )
    )


ROUTES = [preview_hp_search]
