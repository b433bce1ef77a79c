"""When a model version was first used: the earliest time fairltr recorded an alias pointing at
it (a ``promoted`` decision in the registered model's decision log, ``fairltr.decision.<utc>.v<V>.<id>``,
or the version's own ``fairltr.promotion.time`` with verdict ``promoted``). An alias moved without
fairltr (``MlflowClient.set_registered_model_alias``) leaves no time: then None."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

__all__ = ["first_used_time"]

_KEY = re.compile(r"^fairltr\.decision\.(\d{8}T\d{6})Z?\.v([^.]+)\.")


def _iso(stamp: str) -> str:
    return datetime.strptime(stamp, "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc).isoformat()


def first_used_time(model: str, version: str, client: Any = None) -> str | None:
    """ISO 8601 UTC time of the first promotion of ``model`` version ``version`` to an alias, or None."""
    import mlflow

    client = client or mlflow.MlflowClient()
    times = []
    for key, value in (client.get_registered_model(model).tags or {}).items():
        m = _KEY.match(key)
        if m and m.group(2) == str(version) and str(value).startswith(f"v{version} PROMOTED"):
            times.append(_iso(m.group(1)))
    tags = client.get_model_version(model, str(version)).tags or {}
    if tags.get("fairltr.promotion.verdict") == "promoted" and tags.get("fairltr.promotion.time"):
        times.append(datetime.fromisoformat(tags["fairltr.promotion.time"]).astimezone(timezone.utc).isoformat())
    return min(times) if times else None
