"""platform/Dockerfile copies every app of INSTALLED_APPS that lives in this repository,
builds the dashboard's assets from the npm lockfile and puts them where the app serves
them from, and installs the scaled extra (the image runs the scaled-out form)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.apps import apps

pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "platform" / "Dockerfile").read_text()


def instructions() -> list[tuple[str, str]]:
    """(instruction, arguments) in order, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE)
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last = max(i for i, (name, _) in enumerate(steps) if name == "FROM")
    return steps[last:]


def test_every_app_in_installed_apps_is_copied_into_the_image():
    copied = {
        args.split()[-1].rstrip("/") for name, args in final_stage() if name == "COPY" and not args.startswith("--from")
    }
    local = {
        Path(app.path).resolve().relative_to(ROOT).parts[0]
        for app in apps.get_app_configs()
        # in this repository, not a third-party app of a virtual environment inside it (.venv)
        if Path(app.path).resolve().is_relative_to(ROOT) and "site-packages" not in Path(app.path).parts
    }
    assert local - copied == set(), f"apps not copied into the image: {sorted(local - copied)}"
    imported_beside = {"config", "spark_jobs", "clients/python"}  # settings, the Spark jobs, the client
    assert imported_beside - copied == set()


def test_the_image_builds_the_dashboards_assets():
    steps = instructions()
    stages = [args for name, args in steps if name == "FROM"]
    assert len(stages) == 2 and re.match(r"node:\S+ AS assets", stages[0], re.I), stages
    runs = " ; ".join(args for name, args in steps if name == "RUN")
    assert "npm ci" in runs and "npm run" in runs and "build" in runs
    assert (
        "COPY",
        "--from=assets /src/dashboard/static/dashboard/dist dashboard/static/dashboard/dist",
    ) in final_stage()


def test_the_image_installs_the_client_and_the_scaled_extra():
    runs = [args for name, args in final_stage() if name == "RUN" and "pip install" in args]
    assert runs and "./clients/python" in runs[0] and '".[scaled]"' in runs[0], runs
