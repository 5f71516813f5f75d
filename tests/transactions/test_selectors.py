"""The journal's first id since a time: a binary search over ids, since ``at`` has no index."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st

from transactions.models import JournalEvent
from transactions.selectors import JOURNAL_AT_SLACK, journal_first_id_since

pytestmark = pytest.mark.django_db


def _events(offsets_s: list[float]) -> list[JournalEvent]:
    base = timezone.now()
    return JournalEvent.objects.bulk_create(
        [JournalEvent(at=base + timedelta(seconds=s), kind="put", broker="B") for s in offsets_s]
    )


def test_an_empty_journal_has_no_first_id() -> None:
    assert journal_first_id_since(since=timezone.now()) is None


@settings(max_examples=25, deadline=None)
@given(
    steps=st.lists(st.floats(min_value=0, max_value=30), min_size=1, max_size=40),
    behind=st.lists(st.floats(min_value=0, max_value=JOURNAL_AT_SLACK.total_seconds() - 1), min_size=40, max_size=40),
    cut=st.integers(min_value=0, max_value=45),
)
def test_every_event_since_is_at_or_after_the_first_id(steps, behind, cut) -> None:
    """Times grow with ids, each up to the slack behind (a step's time is taken before its
    id): every event at or after ``since`` has an id at or after the one found."""
    JournalEvent.objects.all().delete()
    clock, offsets = 0.0, []
    for step, late in zip(steps, behind):
        clock += step
        offsets.append(clock - late)
    events = _events(offsets)
    ordered = sorted(events, key=lambda e: e.id)
    since = ordered[min(cut, len(ordered) - 1)].at if cut < len(ordered) else ordered[-1].at + timedelta(seconds=1)
    first = journal_first_id_since(since=since)
    wanted = {e.id for e in events if e.at >= since}
    assert first is not None
    assert all(i >= first for i in wanted)
    assert wanted == set(JournalEvent.objects.filter(id__gte=first, at__gte=since).values_list("id", flat=True))
