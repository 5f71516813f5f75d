"""Exporting the workflow instances' history for the analytics job
(``spark_jobs.workflow_analytics``), which never touches the database.

JSON Lines, one history event a line in id order::

    {"id": 7, "at": "2025-05-01T12:00:00.250000+00:00", "broker": "QM1", "workflow": "claims",
     "version": 1, "instance": "41...", "event": "step_committed", "step": "validate",
     "transaction": "9f..."}

The whole history is exported every time (it is a few rows a step, small next to the
journal), so an event whose database transaction commits late is never missed; the file
appears whole or not at all (written under a dot-name beside it, then renamed over it).
Details (free text: reasons) are not exported.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from .models import InstanceHistory

CHUNK_SIZE = 2000
FIELDS = {
    "id": "id",
    "at": "at",
    "broker": "instance__broker__name",
    "workflow": "instance__workflow__name",
    "version": "instance__version__version",
    "instance": "instance_id",
    "event": "event",
    "step": "step",
    "transaction": "transaction",
}


def workflow_history_export(*, path: str | os.PathLike, chunk_size: int = CHUNK_SIZE) -> dict:
    """Write every instance's history to ``path``, replacing it atomically. Returns
    ``{"path", "events"}``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    events = 0
    try:
        with open(temporary, "x", encoding="utf-8") as out:
            for row in _rows(chunk_size):
                out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
                out.write("\n")
                events += 1
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return {"path": str(target), "events": events}


def _rows(chunk_size: int):
    """History rows in id order, ``chunk_size`` at a time (keyset pagination)."""
    after_id = 0
    while True:
        chunk = list(
            InstanceHistory.objects.filter(id__gt=after_id).order_by("id").values_list(*FIELDS.values())[:chunk_size]
        )
        for values in chunk:
            row = dict(zip(FIELDS, values, strict=True))
            yield {**row, "at": row["at"].isoformat()}  # microseconds kept: durations are differences
        if len(chunk) < chunk_size:
            return
        after_id = chunk[-1][0]
