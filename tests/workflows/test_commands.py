"""The workflow commands: define, start, a manual step done from the command line, display,
abort, and a refusal as a one-line error."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from transactions.models import Transaction


def run(*args) -> str:
    out = StringIO()
    call_command(*[str(a) for a in args], stdout=out, stderr=StringIO())
    return out.getvalue()


def test_a_workflow_from_the_command_line(wf, hooks):
    run("define_workflow", "WF", "claim", "--step", "validate:A:cA", "--step", "approve:B:cB", "--deadline-ms", "0")
    assert "approve: B (compensation cB) -> end" in run("display_workflow", "WF", "claim")
    instance = run("start_workflow", "WF", "claim", "expense 42").strip()
    wf.step("A", output="valid")
    out = hooks(run, "complete_step", instance, "approve", "--output", "approved", "--compensation", "revoke")
    assert "committed" in out
    shown = run("display_instance", instance)
    assert "completed" in shown.splitlines()[0]
    assert instance in run("display_instance", "WF", "--workflow", "claim", "--state", "completed")
    with pytest.raises(CommandError, match="completed"):
        run("abort_instance", instance)
    second = run("start_workflow", "WF", "claim", "expense 43").strip()
    with pytest.raises(CommandError, match="not ended"):
        run("delete_workflow", "WF", "claim")
    hooks(run, "fail_step", second, "validate", "--reason", "no receipt")
    assert "compensated" in run("display_instance", second).splitlines()[0]
    run("delete_workflow", "WF", "claim")


def test_a_manual_step_with_a_bad_wait_is_refused_before_anything_begins(wf):
    run("define_workflow", "WF", "claim", "--step", "validate:A:cA", "--deadline-ms", "0")
    instance = run("start_workflow", "WF", "claim", "expense 44").strip()
    before = Transaction.objects.count()
    with pytest.raises(CommandError, match=r"wait: Ensure this value is greater than or equal to 0. \[invalid\]"):
        run("complete_step", instance, "validate", "--wait", "-1")  # checked as REST checks a get's wait
    assert Transaction.objects.count() == before
    assert "running" in run("display_instance", instance).splitlines()[0]
