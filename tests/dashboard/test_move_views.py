"""The queue page's move and resubmit form, and a job's page, through Django's test client
(the job itself: test_moves.py; in a browser with a real worker: browser/test_moves.py)."""

from __future__ import annotations

from django.urls import reverse

from brokers.services.access import grant_actions
from dashboard.models import MoveJob

from .conftest import make_user
from .test_moves import backed_out  # noqa: F401  (fixture)

QUEUE = "/brokers/BO/queues/APP.BACKOUT/"


def signed_in(client, username: str, actions: list[str]):
    make_user(username)
    grant_actions(username=username, broker="BO", actions=actions)
    client.login(username=username, password="pw-for-tests-123")
    return client


def test_an_operator_gets_the_form_on_a_backout_queue_and_starts_a_job(client, backed_out):  # noqa: F811
    client = signed_in(client, "op", ["browse", "put", "get"])
    page = client.get(QUEUE)
    assert b'id="move-form"' in page.content and b"This is a backout queue" in page.content
    assert page.content.count(b'name="msg_id"') == len(backed_out)
    assert b"<option>OTHER</option>" in page.content
    assert b'id="move-form"' not in client.get("/brokers/BO/queues/OTHER/").content  # not a backout queue
    response = client.post(f"{QUEUE}move/", {"action": "move", "target_queue": "OTHER", "msg_id": backed_out[:2]})
    job = MoveJob.objects.get()
    assert response.status_code == 302 and response.headers["location"] == reverse(
        "dashboard-move-job", args=["BO", "APP.BACKOUT", job.pk]
    )
    assert (job.action, job.target_queue, job.msg_ids, job.username) == ("move", "OTHER", backed_out[:2], "op")
    page = client.get(response.headers["location"])
    assert page.status_code == 200 and b'data-socket="/ws/jobs/' in page.content
    assert b"queued" in page.content
    assert f"#{job.pk}".encode() in client.get(QUEUE).content  # listed under recent jobs


def test_a_bad_request_says_why_and_moves_nothing(client, backed_out):  # noqa: F811
    client = signed_in(client, "op", ["browse", "put", "get"])
    response = client.post(f"{QUEUE}move/", {"action": "resubmit"}, follow=True)
    assert b"Nothing moved: Select at least one message." in response.content
    assert not MoveJob.objects.exists()


def test_a_viewer_gets_no_form_and_may_not_start_a_job(client, backed_out):  # noqa: F811
    client = signed_in(client, "view", ["browse"])
    assert b'id="move-form"' not in client.get(QUEUE).content
    assert client.post(f"{QUEUE}move/", {"action": "resubmit", "everything": "yes"}).status_code == 403
    assert not MoveJob.objects.exists()
