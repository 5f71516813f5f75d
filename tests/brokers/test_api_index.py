"""GET /api/ (linked from ./platform/up's banner) lists the API's roots, routes and docs."""

from __future__ import annotations


def test_api_index_lists_roots_routes_and_docs(client, db):
    answer = client.get("/api/")
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert {"/api/brokers/", "/api/channels/", "/api/session/"} <= set(body["roots"])
    assert "/api/brokers/<name:broker>/queues/<name:queue>/messages/" in body["routes"]
    assert body["docs"]["swagger_ui"] == "/api/schema/docs/"
    for path in body["docs"].values():
        assert client.get(path).status_code in (200, 426), path
    assert client.get("/api/brokers/").status_code == 401  # the index shows no data; the roots need a token
