"""REST: starting and following an ingest (no Spark: the job's own tests run it)."""

from __future__ import annotations

import pytest

from ingest.models import Ingest, IngestState
from ingest.services import ingest_progress_note

pytestmark = pytest.mark.django_db

START = "/api/brokers/QM1/queues/Q1/ingests/"


@pytest.fixture
def staging(tmp_path, settings):
    settings.BATON_STAGING_DIR = tmp_path / "staging"
    (tmp_path / "staging" / "in").mkdir(parents=True)
    (tmp_path / "staging" / "in" / "a.jsonl").write_text('{"id": 1}\n')
    (tmp_path / "secret.jsonl").write_text('{"id": 1}\n')
    (tmp_path / "staging" / "link.jsonl").symlink_to(tmp_path / "secret.jsonl")
    return tmp_path / "staging"


def test_start_answers_202_queued_and_the_ingest_can_be_followed(api, queue, staging):
    response = api.post(START, {"source": "in/a.jsonl", "key_field": "id"}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["state"] == "queued" and body["format"] == "jsonl" and body["key_field"] == "id"
    followed = api.get(f"/api/ingests/{body['id']}/").json()
    assert {
        k: followed[k]
        for k in (
            "id",
            "broker",
            "queue",
            "source",
            "records_total",
            "records_done",
            "messages_put",
            "duplicates_skipped",
            "error",
            "started_at",
            "finished_at",
        )
    } == {
        "id": body["id"],
        "broker": "QM1",
        "queue": "Q1",
        "source": "in/a.jsonl",
        "records_total": None,
        "records_done": 0,
        "messages_put": 0,
        "duplicates_skipped": 0,
        "error": "",
        "started_at": None,
        "finished_at": None,
    }
    assert [i["id"] for i in api.get(START).json()["ingests"]] == [body["id"]]
    assert body["dedup_retention_days"] == 7  # the default: a daily rerun within a week skips every record


@pytest.mark.parametrize("days", [0, 3651, "week", 1.5])
def test_a_key_retention_out_of_range_is_invalid(api, queue, staging, days):
    response = api.post(START, {"source": "in/a.jsonl", "dedup_retention_days": days}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "invalid", response.content
    assert "dedup_retention_days" in response.json()["errors"]
    assert not Ingest.objects.exists()


def test_the_declared_retention_is_kept(api, queue, staging):
    response = api.post(START, {"source": "in/a.jsonl", "dedup_retention_days": 30}, format="json")
    assert response.status_code == 202 and response.json()["dedup_retention_days"] == 30
    assert Ingest.objects.get().dedup_retention_days == 30


@pytest.mark.parametrize(
    "source", ["../secret.jsonl", "/etc/passwd", "link.jsonl", "in/../../secret.jsonl", "missing.jsonl", ""]
)
def test_sources_outside_the_staging_directory_or_missing_are_refused(api, queue, staging, source):
    response = api.post(START, {"source": source}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid" and "source" in response.json()["errors"]
    assert not Ingest.objects.exists()


def test_unknown_fields_and_bad_formats_are_invalid(api, queue, staging):
    response = api.post(START, {"source": "in/a.jsonl", "colour": "red"}, format="json")
    assert response.status_code == 400 and response.json()["errors"] == {"colour": ["Unknown field."]}
    response = api.post(START, {"source": "in/a.jsonl", "format": "xml"}, format="json")
    assert response.status_code == 400 and "format" in response.json()["errors"]
    response = api.post(START, {"source": "in/a.jsonl", "format": "text", "key_field": "id"}, format="json")
    assert response.status_code == 400


def test_unknown_queue_and_ingest_are_404(api, queue, staging):
    assert api.post("/api/brokers/QM1/queues/NOPE/ingests/", {"source": "in/a.jsonl"}, format="json").status_code == 404
    assert api.get("/api/ingests/nope/").json()["code"] == "not_found"


def test_progress_adds_puts_over_attempts_and_counts_each_partition_once(api, queue, staging):
    ingest = api.post(START, {"source": "in/a.jsonl"}, format="json").json()
    progress = f"/api/ingests/{ingest['id']}/progress/"
    assert api.post(progress, {"records_total": 300}, format="json").status_code == 200
    # partition 0's first attempt put 100 and failed; its retry found them and put 50 more
    for report in (
        {"partition": 0, "attempt": 0, "done": 100, "put": 100},
        {"partition": 0, "attempt": 1, "done": 100, "put": 0},
        {"partition": 0, "attempt": 1, "done": 150, "put": 50},
        {"partition": 1, "attempt": 0, "done": 150, "put": 120},
    ):
        response = api.post(progress, report, format="json")
        assert response.status_code == 200, response.content
    body = response.json()
    assert (body["records_total"], body["records_done"], body["messages_put"], body["duplicates_skipped"]) == (
        300,
        300,
        270,
        30,
    )
    assert api.post(progress, {"partition": 0}, format="json").status_code == 400


def test_a_finished_ingest_takes_no_progress(queue, staging, api):
    ingest = Ingest.objects.create(broker="QM1", queue="Q1", source="in/a.jsonl", state=IngestState.SUCCEEDED)
    from baton_client.errors import Conflict

    with pytest.raises(Conflict):
        ingest_progress_note(ingest_id=ingest.pk, report={"records_total": 1})
