"""Dashboard pages through Django's test client: sign-in, what each user sees, the message
browser never changing a message, put and purge through the services."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put

pytestmark = pytest.mark.django_db


def test_pages_need_a_sign_in_at_login(client):
    for path in ("/", "/channels/", "/analytics/", "/brokers/X/", "/brokers/X/transactions/"):
        response = client.get(path)
        assert response.status_code == 302 and response.headers["location"].startswith("/login/?next="), path


def test_sign_in_and_out(client, db):
    from .conftest import make_user

    make_user("ann")
    page = client.get("/login/")
    assert page.status_code == 200 and b'name="password"' in page.content
    response = client.post("/login/", {"username": "ann", "password": "pw-for-tests-123"})
    assert response.status_code == 302 and response.headers["location"] == "/"
    assert client.get("/").status_code == 200
    assert client.post("/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_wrong_password_is_refused(client, db):
    from .conftest import make_user

    make_user("ann")
    response = client.post("/login/", {"username": "ann", "password": "wrong"})
    assert response.status_code == 200 and b"didn't match" in response.content


def test_viewer_sees_only_what_it_may_browse(viewer_client):
    page = viewer_client.get("/").content.decode()
    assert 'data-broker="SEEN"' in page and 'data-broker="HIDDEN"' not in page
    assert viewer_client.get("/brokers/SEEN/").status_code == 200
    assert viewer_client.get("/brokers/HIDDEN/").status_code == 403
    assert viewer_client.get("/brokers/HIDDEN/transactions/").status_code == 403
    assert viewer_client.get("/brokers/HIDDEN/queues/Q2/").status_code == 403
    queue = viewer_client.get("/brokers/SEEN/queues/Q1/").content.decode()
    assert "Put a message" not in queue and "Purge" not in queue  # a viewer gets no buttons
    assert viewer_client.post("/brokers/SEEN/queues/Q1/put/", {"body": "x"}).status_code == 403
    assert viewer_client.get("/brokers/SEEN/queues/Q1/purge/").status_code == 403


def test_message_browser_shows_every_state_and_changes_nothing(admin_client, queue):
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b'{"a": 1}')])
    producer = message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"\xff\x00")], syncpoint="yes")
    page = admin_client.get("/brokers/QM1/queues/Q1/").content.decode()
    assert 'data-state="available"' in page and 'data-state="uncommitted_put"' in page
    assert producer.transaction_id in page  # the unit of work holding it, linked to the graph
    got = message_get(broker="QM1", queue="Q1")
    assert got.messages and bytes(got.messages[0].body) == b'{"a": 1}'  # still there after browsing


def test_message_detail_and_download(admin_client, queue):
    put = message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b'{"a": [1, 2]}')])
    msg_id = put.messages[0].msg_id
    page = admin_client.get(f"/brokers/QM1/queues/Q1/messages/{msg_id}/").content.decode()
    assert "&quot;a&quot;: [" in page and "7b 22 61" in page and "eyJhIjogWzEsIDJdfQ==" in page
    body = admin_client.get(f"/brokers/QM1/queues/Q1/messages/{msg_id}/body/")
    assert body.status_code == 200 and b"".join(body) == b'{"a": [1, 2]}'
    assert admin_client.get(f"/brokers/QM1/queues/Q1/messages/{'0' * 48}/").status_code == 404


def test_paging_both_ways(admin_client, queue):
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=f"m{i}".encode()) for i in range(30)])
    first = admin_client.get("/brokers/QM1/queues/Q1/")
    assert first.context["next"] and not first.context["previous"]
    second = admin_client.get(f"/brokers/QM1/queues/Q1/?cursor={first.context['next']}")
    assert len(second.context["rows"]) == 5 and second.context["previous"] and not second.context["next"]
    back = admin_client.get(f"/brokers/QM1/queues/Q1/?cursor={second.context['previous']}")
    assert [r["m"].msg_id for r in back.context["rows"]] == [r["m"].msg_id for r in first.context["rows"]]


def test_put_then_purge_with_the_count_shown_first(admin_client, queue):
    response = admin_client.post("/brokers/QM1/queues/Q1/put/", {"body": "hello", "priority": "3"})
    assert response.status_code == 302
    admin_client.post("/brokers/QM1/queues/Q1/put/", {"body": "again"})
    confirm = admin_client.get("/brokers/QM1/queues/Q1/purge/")
    assert confirm.context["count"] == 2 and b'id="purge-count">2<' in confirm.content
    admin_client.post("/brokers/QM1/queues/Q1/purge/", {"count": "2"})
    assert admin_client.get("/brokers/QM1/queues/Q1/purge/").context["count"] == 0


@pytest.mark.parametrize(
    "form, said",
    [
        ({"priority": "high"}, "Priority must be a whole number from 0 to 9."),
        ({"properties": "[1]"}, "The message is not valid."),
    ],
)
def test_a_bad_put_form_says_why_and_puts_nothing(admin_client, queue, form, said):
    response = admin_client.post("/brokers/QM1/queues/Q1/put/", {"body": "x", **form})
    assert response.status_code == 302
    assert [str(m) for m in get_messages(response.wsgi_request)] == [f"Not put: {said}"]
    assert admin_client.get("/brokers/QM1/queues/Q1/purge/").context["count"] == 0


def test_a_purge_count_not_a_whole_number_from_0_is_400_and_purges_nothing(admin_client, queue):
    admin_client.post("/brokers/QM1/queues/Q1/put/", {"body": "kept"})
    response = admin_client.post("/brokers/QM1/queues/Q1/purge/", {"count": "-1"})  # the others: test_forms.py
    assert response.status_code == 400 and "The count must not be negative." in response.content.decode()
    assert admin_client.get("/brokers/QM1/queues/Q1/purge/").context["count"] == 1


def test_rates_and_other_pages(admin_client, queue):
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"x")])
    rates = admin_client.get("/rates/?window=60").json()
    assert rates["bucket"] == 1 and sum(p["put"] for p in rates["points"]) == 1
    assert admin_client.get("/rates/?window=7").status_code == 400
    for path in ("/", "/brokers/QM1/", "/brokers/QM1/transactions/", "/channels/", "/analytics/"):
        assert admin_client.get(path).status_code == 200, path


def test_api_docs_use_no_cdn(admin_client):
    for path in ("/api/schema/docs/", "/api/schema/redoc/"):
        page = admin_client.get(path).content.decode()
        assert "cdn." not in page and "/static/drf_spectacular_sidecar/" in page, path


def test_the_browser_previews_bodies_and_filters_by_body_and_property_paged(admin_client, queue):
    message_put(
        broker="QM1",
        queue="Q1",
        messages=[
            MessageInput(body=b'{"order": 7}', properties={"colour": "red", "n": 3}),
            MessageInput(body=b"\xff\xfe binary", properties={"colour": "blue"}),
            *[MessageInput(body=f"order line {i}".encode(), properties={"colour": "red"}) for i in range(30)],
        ],
    )
    page = admin_client.get("/brokers/QM1/queues/Q1/")
    previews = [(r["preview"].kind, r["preview"].text) for r in page.context["rows"][:3]]
    assert previews == [("json", '{"order":7}'), ("hex", "ff fe 20 62 69 6e 61 72 79"), ("text", "order line 0")]
    assert "<code>{&quot;order&quot;:7}</code>" in page.content.decode()

    def msg_bodies(response):
        return [r["preview"].text for r in response.context["rows"]]

    assert msg_bodies(admin_client.get("/brokers/QM1/queues/Q1/", {"body_contains": "binary"})) == [
        "ff fe 20 62 69 6e 61 72 79"
    ]
    assert msg_bodies(admin_client.get("/brokers/QM1/queues/Q1/", {"property": "n=3"})) == ['{"order":7}']
    assert msg_bodies(admin_client.get("/brokers/QM1/queues/Q1/", {"property": "n"})) == ['{"order":7}']
    # paged within the filter: 31 red ones, 25 a page; the links keep the filter
    red = admin_client.get("/brokers/QM1/queues/Q1/", {"property": "colour=red", "body_contains": "order"})
    assert len(red.context["rows"]) == 25 and "property=colour%3Dred&amp;cursor=" in red.content.decode()
    rest = admin_client.get(
        "/brokers/QM1/queues/Q1/", {"property": "colour=red", "body_contains": "order", "cursor": red.context["next"]}
    )
    assert msg_bodies(rest) == [f"order line {i}" for i in range(24, 30)] and not rest.context["next"]
    none = admin_client.get("/brokers/QM1/queues/Q1/", {"body_contains": "nowhere"})
    assert none.context["rows"] == [] and "No message matches the filter." in none.content.decode()
    # nothing changed state: every message is still there, never delivered
    got = message_get(broker="QM1", queue="Q1", batch=40)
    assert len(got.messages) == 32 and all(m.delivery_count == 0 for m in got.messages)


@pytest.mark.parametrize(
    "query, field",
    [
        ({"body_contains": "x" * 201}, "body_contains"),
        ({"property": "=red"}, "property"),
        ({"property": "bad name=1"}, "property"),
        ({"property": "k=" + "v" * 201}, "property"),
    ],
)
def test_a_filter_too_long_or_malformed_is_400_with_the_reason(admin_client, queue, query, field):
    response = admin_client.get("/brokers/QM1/queues/Q1/", query)
    assert response.status_code == 400
    assert response.context["rows"] == [] and field in response.context["filter_error"].details["errors"]
    assert 'id="filter-error"' in response.content.decode()


def test_a_bad_filter_reads_on_the_page_as_rest_answers_it(admin_client, queue):
    response = admin_client.get("/brokers/QM1/queues/Q1/", {"property": "=red"})
    rest = admin_client.get("/api/brokers/QM1/queues/Q1/messages/", {"property": "=red"}).json()
    assert response.context["filter_error"].as_dict() == rest
    assert rest["message"] in response.content.decode()
