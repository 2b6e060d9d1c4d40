"""Logging of `kforge api`: uvicorn's own loggers as uvicorn sets them, plus
KForge's with the request id on every line (uvicorn's access log is off: the
request middleware writes one line per request, with its id)."""

from __future__ import annotations

import copy
from typing import Any

from uvicorn.config import LOGGING_CONFIG

FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"


def log_config(level: str = "INFO") -> dict[str, Any]:
    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"request_id": {"()": "app.api.middleware.RequestIdFilter"}}
    config["formatters"]["kforge"] = {"format": FORMAT}
    config["handlers"]["kforge"] = {"class": "logging.StreamHandler", "stream": "ext://sys.stderr",
                                    "formatter": "kforge", "filters": ["request_id"]}
    config["loggers"]["kforge"] = {"handlers": ["kforge"], "level": level, "propagate": False}
    return config
