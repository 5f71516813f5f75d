"""The client as its own distribution: it installs and imports without Django, and the
server and the client share one exception hierarchy with the same set of codes."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import websockets

from baton_client import errors as client_errors
from config.errors import DRF_ERRORS

pytestmark = pytest.mark.once  # once: imports, packaging and the client's own code; no database

ROOT = Path(__file__).resolve().parents[2]
SERVER_PACKAGES = ("config", "transactions", "brokers", "dashboard")


def _server_modules_imported() -> None:
    """Every module of the server's packages (so that every error class it defines exists)."""
    for name in SERVER_PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            if ".migrations" not in info.name and "frontend" not in info.name:
                importlib.import_module(info.name)


def _subclasses(cls: type) -> set[type]:
    found: set[type] = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def test_the_server_and_the_client_know_the_same_codes():
    _server_modules_imported()
    server = {cls.code for cls in _subclasses(client_errors.BatonError)} | {error.code for _, error in DRF_ERRORS}
    client = set(client_errors.ERRORS)
    assert server - client_errors.CLIENT_ONLY == client - client_errors.CLIENT_ONLY
    # one hierarchy: 409s are Conflicts, 404s NotFounds, wherever they are defined
    for cls in _subclasses(client_errors.BatonError):
        if cls.status == 409:
            assert issubclass(cls, client_errors.Conflict), cls
        if cls.status == 404:
            assert issubclass(cls, client_errors.NotFound), cls


def test_the_server_raises_the_client_classes():
    from brokers.services.locks import LockNotFound
    from transactions.exceptions import TransactionNotFound

    assert issubclass(TransactionNotFound, client_errors.NotFound) and issubclass(LockNotFound, client_errors.NotFound)


def test_the_distribution_installs_and_imports_without_django(tmp_path):
    """pip-installs clients/python (not editable, no dependencies) into a directory and
    imports it from there, with httpx and websockets from this environment, in a process
    that never sees the server's code."""
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            str(ROOT / "clients" / "python"),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    deps = sorted({str(Path(m.__file__).resolve().parents[1]) for m in (httpx, websockets)})
    code = (
        "import sys; sys.path[:0] = sys.argv[1:]\n"
        "import baton_client, baton_client.session\n"
        f"assert baton_client.__file__.startswith({str(target)!r}), baton_client.__file__\n"
        "assert baton_client.Client and baton_client.QueueFull.status == 409\n"
        "server = ('django', 'rest_framework', 'pyspark', 'brokers', 'config', 'transactions')\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in server], sorted(sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", code, str(target), *deps], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
