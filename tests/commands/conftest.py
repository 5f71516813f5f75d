"""Helpers for the administrator commands' tests: run a command in-process and capture
what it printed."""

from __future__ import annotations

from dataclasses import dataclass
from io import StringIO

import pytest
from django.core.management import call_command


@dataclass
class Ran:
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


def run(name: str, *args, **options) -> Ran:
    """``manage.py name args...`` in-process; raises CommandError as the command does."""
    out, err = StringIO(), StringIO()
    call_command(name, *[str(a) for a in args], stdout=out, stderr=err, **options)
    return Ran(out.getvalue(), err.getvalue())


@pytest.fixture
def cmd():
    return run
