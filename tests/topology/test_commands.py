"""``manage.py baton definitions export|plan|apply``: JSON and YAML files, the exit codes
(plan: 0 no changes, 2 changes, 1 refused or not valid), and the boot file's skip when it
is unchanged (platform/up's BATON_DEFINITIONS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from brokers.models import Broker, Queue
from brokers.services.messages import message_put
from tests.conftest import database_url, msgs

ROOT = Path(__file__).resolve().parent.parent.parent


def baton(*words, status: int | None = None) -> tuple[str, str]:
    """``manage.py baton definitions ...`` in-process: (stdout, stderr); ``status``: the exit
    status it must end with (None: none, it returns)."""
    out, err = StringIO(), StringIO()
    if status is None:
        call_command("baton", "definitions", *map(str, words), stdout=out, stderr=err)
    else:
        with pytest.raises(SystemExit) as ended:
            call_command("baton", "definitions", *map(str, words), stdout=out, stderr=err)
        assert ended.value.code == status, (out.getvalue(), err.getvalue())
    return out.getvalue(), err.getvalue()


def test_export_writes_json_or_yaml_and_the_same_bytes_each_time(platform, tmp_path):
    out, _ = baton("export")
    assert json.loads(out)["format"] == "baton-definitions/1"
    baton("export", "-o", tmp_path / "a.json")
    assert (tmp_path / "a.json").read_text() == out == baton("export")[0]
    baton("export", "--broker", "QMB", "--all", "-o", tmp_path / "b.yaml")
    document = yaml.safe_load((tmp_path / "b.yaml").read_text())
    assert document["broker"] == "QMB" and document["queues"][0]["put_enabled"] is True


def test_plan_exit_status_says_whether_anything_would_change(platform, tmp_path):
    path = tmp_path / "defs.yaml"
    baton("export", "-o", path)
    out, _ = baton("plan", path, status=None)
    assert out.strip() == "No changes."
    document = yaml.safe_load(path.read_text())
    document["queues"].append({"broker": "QMA", "name": "NEW", "max_depth": 5})
    document["subscriptions"] = []
    path.write_text(yaml.safe_dump(document))
    out, _ = baton("plan", path, status=2)
    assert out.splitlines() == ['+ queue QMA/NEW {"max_depth": 5}']
    out, _ = baton("plan", path, "--prune", status=2)
    assert out.splitlines() == ["- subscription QMA/S1", '+ queue QMA/NEW {"max_depth": 5}']
    assert not Queue.objects.filter(name="NEW").exists()


def test_apply_then_plan_finds_nothing_left(platform, tmp_path):
    path = tmp_path / "defs.json"
    baton("export", "-o", path)
    document = json.loads(path.read_text())
    document["brokers"].append({"name": "QMC", "description": "new"})
    path.write_text(json.dumps(document))
    out, _ = baton("apply", path)
    assert out.strip() == '+ broker QMC {"description": "new"}'
    assert Broker.objects.get(name="QMC").description == "new"
    assert baton("plan", path)[0].strip() == "No changes."


def test_refused_and_invalid_documents_exit_1_having_changed_nothing(platform, tmp_path):
    message_put(broker="QMB", queue="ORDERS", messages=msgs("kept"))
    path = tmp_path / "defs.json"
    baton("export", "-o", path)
    document = json.loads(path.read_text())
    document["queues"] = [q for q in document["queues"] if q["broker"] != "QMB"]
    path.write_text(json.dumps(document))
    out, _ = baton("plan", path, "--prune", status=1)
    assert "! queue QMB/ORDERS: not_empty: Queue 'ORDERS' holds messages" in out
    _, err = baton("apply", path, "--prune", status=1)
    assert "Nothing was applied" in err and "QMB/ORDERS" in err
    baton("apply", path, "--prune", "--force")
    assert not Queue.objects.filter(broker__name="QMB", name="ORDERS").exists()
    document["queues"].append({"broker": "QMA", "name": "Q", "max_depht": 1})
    path.write_text(json.dumps(document))
    _, err = baton("apply", path, status=1)
    assert "queues[" in err and "max_depht" in err and "Unknown field" in err
    (tmp_path / "broken.yaml").write_text("format: [")
    _, err = baton("plan", tmp_path / "broken.yaml", status=1)
    assert "not valid YAML" in err


@pytest.mark.once
def test_the_boot_file_is_applied_once_and_skipped_while_unchanged(transactional_db, tmp_path):
    path = tmp_path / "boot.json"
    path.write_text(json.dumps({"format": "baton-definitions/1", "brokers": [{"name": "BOOT"}]}))
    env = {**os.environ, "DATABASE_URL": database_url(), "BATON_VAR_DIR": str(tmp_path / "var")}

    def boot() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", "baton", "definitions", "apply", str(path), "--if-changed"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    first = boot()
    assert first.returncode == 0 and "+ broker BOOT" in first.stdout, first.stderr
    assert Broker.objects.filter(name="BOOT").exists()
    Broker.objects.filter(name="BOOT").update(description="changed by hand")
    second = boot()
    assert second.returncode == 0 and "skipped" in second.stdout
    assert Broker.objects.get(name="BOOT").description == "changed by hand"  # not applied again
    path.write_text(json.dumps({"format": "baton-definitions/1", "brokers": [{"name": "BOOT", "description": "x"}]}))
    third = boot()
    assert third.returncode == 0 and "~ broker BOOT" in third.stdout
    path.write_text(json.dumps({"format": "baton-definitions/1", "brokers": [{"name": "bad name"}]}))
    bad = boot()
    assert bad.returncode == 1 and "brokers[0].name" in bad.stderr
