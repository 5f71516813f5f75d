"""Ingest resolves every file it reads: a symbolic link inside a staging folder that leads
outside the staging directory refuses the source (at start and when the job runs), and the
Spark job's input list is built from resolved paths inside the staging directory."""

from __future__ import annotations

import pytest

from ingest.exceptions import SourceRefused
from ingest.models import Ingest
from ingest.staging import staging_files
from spark_jobs.ingest import IngestError, source_files

START = "/api/brokers/QM1/queues/Q1/ingests/"


@pytest.fixture
def staging(tmp_path, settings):
    root = tmp_path / "staging"
    settings.BATON_STAGING_DIR = root
    (root / "in").mkdir(parents=True)
    (root / "in" / "a.jsonl").write_text('{"id": 1}\n')
    (root / "in" / "again.jsonl").symlink_to(root / "in" / "a.jsonl")  # a link that stays inside: fine
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.jsonl").write_text('{"secret": 1}\n')
    return root


@pytest.mark.django_db
@pytest.mark.parametrize("link", ["file", "folder"])
def test_a_folder_with_a_link_leading_out_is_refused(api, queue, staging, link):
    outside = staging.parent / "outside"
    if link == "file":
        (staging / "in" / "leak.jsonl").symlink_to(outside / "secret.jsonl")
    else:
        (staging / "in" / "more").symlink_to(outside, target_is_directory=True)
    response = api.post(START, {"source": "in"}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid" and "source" in response.json()["errors"]
    assert not Ingest.objects.exists()


@pytest.mark.once
def test_the_files_read_are_resolved_and_inside(staging):
    assert staging_files("in") == [(staging / "in" / "a.jsonl").resolve()]
    assert source_files(staging / "in", staging) == [(staging / "in" / "a.jsonl").resolve()]
    (staging / "in" / "leak.jsonl").symlink_to(staging.parent / "outside" / "secret.jsonl")
    with pytest.raises(SourceRefused):
        staging_files("in")
    with pytest.raises(IngestError):
        source_files(staging / "in", staging)
