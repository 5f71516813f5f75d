"""The garbage collector's tuning in Baton's long-running processes (config/collector.py)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

from config.collector import collector_tuned, threshold_parsed


def test_threshold_parsed():
    assert threshold_parsed("20000,50,100") == (20000, 50, 100)
    assert threshold_parsed(" 700, 10 ,10") == (700, 10, 10)


@pytest.mark.parametrize("bad", ["20000,50", "a,b,c", "0,10,10", "1,2,3,4", "-1,10,10"])
def test_a_bad_threshold_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="BATON_GC_THRESHOLD must be three positive whole numbers"):
        threshold_parsed(bad)


@pytest.fixture
def collector_restored():
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)
    gc.unfreeze()


def test_tuned_freezes_what_is_held_and_sets_the_thresholds(collector_restored):
    held = [object() for _ in range(3)]
    collector_tuned("12345,6,7")
    assert gc.get_threshold() == (12345, 6, 7)
    assert gc.get_freeze_count() > len(held)


def test_an_empty_threshold_keeps_pythons(collector_restored):
    before = gc.get_threshold()
    collector_tuned("")
    assert gc.get_threshold() == before


def test_the_setting_refuses_a_bad_threshold_at_start():
    env = {**os.environ, "BATON_GC_THRESHOLD": "lots", "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "ImproperlyConfigured: BATON_GC_THRESHOLD must be three positive whole numbers" in done.stderr


def test_the_web_application_tunes_its_collector_once_loaded():
    env = {**os.environ, "BATON_GC_THRESHOLD": "23456,7,8", "DJANGO_SETTINGS_MODULE": "config.settings"}
    code = "import gc, config.asgi; print(gc.get_threshold(), gc.get_freeze_count() > 10000)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[-2] == "(23456, 7, 8) True"
