"""`bench.flow_floor_pg`: the bare server under the queue flow through sessions on PostgreSQL
moves every message of every flow once, and leaves no table behind (figures are never
asserted)."""

from __future__ import annotations

import pytest
from django.db import connection

from bench.flow_floor_pg import CONTRACT_LABEL, ENGINE_LABEL, LABEL, left_behind, run_flow_floor_pg
from tests.conftest import database_url

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the floor of the PostgreSQL form")
@pytest.mark.parametrize(
    ("writes", "label"), [("queue", LABEL), ("engine", ENGINE_LABEL), ("contract", CONTRACT_LABEL)]
)
def test_every_flow_moves_its_messages_through_the_floor_and_leaves_nothing(tmp_path, writes, label):
    url = database_url()
    results = run_flow_floor_pg(database_url=url, directory=tmp_path, messages=4, writes=writes)
    assert [(r.path, r.operation, r.clients, r.batch, r.messages) for r in results] == [
        (label, "put+get", 2, 1, 4),
        (label, "put+get", 2, 100, 100),
        (label, "put+get", 8, 1, 4),
        (label, "put+get", 8, 100, 400),
    ]
    assert all(r.rate > 0 for r in results)
    assert left_behind(database_url=url) == {}
