"""`bench.floor_contract`: the PostgreSQL floor with the contract's messages stores every field
of a message, answers a put and a get with each message's descriptor as docs/api.md has it,
takes higher priorities first and skips expired messages (figures are never asserted)."""

from __future__ import annotations

import datetime
import json

import psycopg
import pytest
from django.db import connection
from websockets.sync.client import connect

from bench import floor_contract as contract
from bench.flow_floor_pg import flow_floor_pg_server
from bench.plain import postgres_conninfo
from tests.conftest import database_url

NOW = datetime.datetime(2026, 12, 5, 12, 0, tzinfo=datetime.timezone.utc)


def test_put_fields_share_what_messages_share_and_take_bodies_as_bytes():
    shared, bodies = contract.put_fields(
        [{"body": "é", "priority": 4, "correl_id": "c"}, {"body_base64": "AAE=", "priority": 4, "correl_id": "c"}],
        now=NOW,
    )
    assert bodies == ["é".encode(), b"\x00\x01"]  # NUL and 1 are text too
    assert shared[:4] == ["c", None, "datagram", 4]
    assert shared[-1] == NOW


@pytest.mark.parametrize(
    "messages",
    [
        [{"body": "a", "priority": 1}, {"body": "b", "priority": 2}],
        [{"body": "a", "priority": 10}],
        [{"msg_type": "x"}],
    ],
)
def test_put_fields_refuse_what_this_floor_does_not_serve(messages):
    with pytest.raises(contract.Refused):
        contract.put_fields(messages, now=NOW)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="the floor of the PostgreSQL form")
def test_the_floor_answers_descriptors_in_the_delivery_sequence(tmp_path):
    conninfo = postgres_conninfo(database_url())
    table = "baton_flow_floor_contract_test"
    with psycopg.connect(conninfo, autocommit=True) as admin:
        admin.execute(contract.TABLE.format(table=table))
        admin.execute(contract.INDEX.format(table=table))
        admin.execute(
            f"CREATE TABLE {table}_room (id int PRIMARY KEY, reserved bigint NOT NULL, max_depth bigint NOT NULL)"
        )
        admin.execute(f"INSERT INTO {table}_room VALUES (1, 0, 3)")
        admin.execute(f"CREATE TABLE {table}_released (stripe int PRIMARY KEY, released bigint NOT NULL)")
        admin.execute(
            f"CREATE TABLE {table}_journal (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(),"
            " kind text NOT NULL, msg_ids text[] NOT NULL, count int NOT NULL)"
        )
    try:
        with flow_floor_pg_server(conninfo=conninfo, directory=tmp_path, writes="contract") as url, connect(url) as ws:

            def call(op, **fields):
                ws.send(json.dumps({"op": op, "id": 1, "broker": "FLOOR", "queue": table, **fields}))
                return json.loads(ws.recv())

            low = call("put", body="low", correl_id="c1", properties={"k": "v"})
            assert low["status"] == 201
            assert (low["correl_id"], low["priority"], low["properties"], low["queue"]) == ("c1", 0, {"k": "v"}, table)
            assert "body" not in low and low["put_time"] and low["delivery_count"] == 0
            high = call("put", messages=[{"body_base64": "/wA=", "priority": 7}] * 2)
            assert [m["priority"] for m in high["messages"]] == [7, 7]
            assert call("put", body="over the limit")["code"] == "queue_full"
            with psycopg.connect(conninfo, autocommit=True) as admin:  # first by priority, but expired
                admin.execute(
                    f"INSERT INTO {table} ({', '.join(contract.COLUMNS)}) VALUES ('expired', NULL, NULL, 'datagram', 9,"
                    " true, now() - interval '1 second', '', '', '', '[]', '{}', now(), 0, 0, 'x')"
                )
            got = call("get", batch=10, wait=0)["messages"]
            assert [m["msg_id"] for m in got] == [m["msg_id"] for m in high["messages"]] + [low["msg_id"]]
            assert [m.get("body_base64") for m in got] == ["/wA=", "/wA=", None]
            assert got[2]["body"] == "low" and got[2]["delivery_count"] == 1 and got[2]["correl_id"] == "c1"
            assert set(got[2]) == set(low) - {"re", "status"} | {"body"}
    finally:
        with psycopg.connect(conninfo, autocommit=True) as admin:
            for suffix in ("", "_room", "_released", "_journal"):
                admin.execute(f"DROP TABLE IF EXISTS {table}{suffix}")
