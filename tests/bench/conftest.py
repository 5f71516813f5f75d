"""The benchmark tools' own tests: every test in this directory is marked ``bench`` and so
left out of the default suite (pyproject's ``addopts``: ``-m "not bench"``). They run each
benchmark end to end on its smallest workload and check its options and the shape of its
output, never a figure: ``./platform/test -m bench`` (both passes) or
``python -m pytest -m bench tests/bench``."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if Path(item.fspath).is_relative_to(HERE):
            item.add_marker(pytest.mark.bench)


@pytest.fixture(autouse=True)
def _bench_settings(monkeypatch, settings):
    """The benchmarks run with bench.settings (the platform's and the bench app): the
    commands these tests start as ``manage.py COMMAND`` inherit it, and those they call in
    this process find it installed."""
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "bench.settings")
    settings.INSTALLED_APPS = [*settings.INSTALLED_APPS, "bench"]
