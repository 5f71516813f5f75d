"""The channel and linked-transaction suites, rerun in the scaled-out form: on a database
of their own on the PostgreSQL server, with Redis as the wake-up bus, the channel layer and
Celery's transport (the session's Redis server), in a pytest of their own.

Left out unless ``BATON_SCALED_FULL=1`` (the long mode, not run by CI), to keep this to
about two minutes: the Hypothesis state machine of linked transactions (about 70 s, one
process, nothing between processes) and the HTTP channel tests (about a minute; they start
platform instances of their own on the embedded default, the same in either form). Both
run in both passes of platform/test already."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.integration.servers import ROOT, tail

from .conftest import scaled_env, scratch_database

pytestmark = [pytest.mark.integration, pytest.mark.scaled]

SUITES = ["tests/linked", "tests/transfer"]
LONG = [
    "tests/linked/test_linked_state_machine.py::test_linked_transactions_agree_with_model",
    "tests/transfer/test_http.py",
]


def test_channel_and_linked_transaction_suites_pass_scaled_out(redis_server, tmp_path):
    with scratch_database("baton_suites") as url:
        env = {**os.environ, **scaled_env(url, redis_server, "suites"), "BATON_WAKEUPS": "auto"}
        env.pop("BATON_WAKEUP_REDIS_URL", None)
        args = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=-ra --strict-markers",
            *SUITES,
        ]
        if os.environ.get("BATON_SCALED_FULL") != "1":
            args += [f"--deselect={test}" for test in LONG]
        log = tmp_path / "suites.log"
        with log.open("wb") as out:
            code = subprocess.run(
                args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=900, check=False
            ).returncode
    text = tail(log, 20_000)
    assert code == 0, f"the suites failed in the scaled-out form (exit {code}):\n{text}"
    assert " passed" in text and " failed" not in text, text
