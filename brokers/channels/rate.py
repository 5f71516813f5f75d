"""A channel's recent rate of confirmed traffic (messages and bytes per second).

An exponentially decayed count: each confirmed batch adds ``n / TAU_S`` to the rate, and
the rate decays by ``exp(-dt / TAU_S)`` over ``dt`` seconds, so a steady flow of r per
second reads r, and a channel that stopped reads towards 0 within a few ``TAU_S``.
"""

from __future__ import annotations

import math
from datetime import datetime

TAU_S = 10.0


def rate_decayed(*, rate: float, at: datetime | None, now: datetime) -> float:
    """``rate`` as of ``at``, seen at ``now``."""
    if at is None or rate <= 0:
        return 0.0
    return rate * math.exp(-max(0.0, (now - at).total_seconds()) / TAU_S)


def rate_added(*, rate: float, at: datetime | None, now: datetime, count: int) -> float:
    """The rate after ``count`` more (messages or bytes) at ``now``."""
    return rate_decayed(rate=rate, at=at, now=now) + count / TAU_S
