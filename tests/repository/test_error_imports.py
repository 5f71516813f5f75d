"""Each error class of the one hierarchy has one import route: the shared classes are
defined in the client distribution (``baton_client.errors``) and every module of the
repository imports them from there, never through a module that re-exports them
(``config.errors`` renders them; ``brokers.exceptions`` and the other domain modules hold
only their own subclasses)."""

from __future__ import annotations

import ast
import subprocess
from functools import cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parents[2]


def _shared_names() -> set[str]:
    tree = ast.parse((ROOT / "clients/python/baton_client/errors.py").read_text())
    return {node.name for node in tree.body if isinstance(node, ast.ClassDef)}


@cache
def _source(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path
    return None


@cache
def _own_classes(path: Path) -> set[str]:
    return {node.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ClassDef)}


def _routes() -> list[str]:
    shared = _shared_names()
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    found = []
    for relative in files.stdout.split():
        if relative.startswith("clients/python/"):
            continue
        path = ROOT / relative
        package = ".".join(Path(relative).with_suffix("").parts)
        if path.name != "__init__.py":
            package = package.rpartition(".")[0]
        else:
            package = package.removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(), relative)):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*parts, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module.split(".")[0] == "baton_client":
                continue
            source = _source(module)
            if source is None:
                continue
            own = _own_classes(source)
            for alias in node.names:
                if alias.name in shared and alias.name not in own:
                    found.append(f"{relative}:{node.lineno} imports {alias.name} from {module}")
    return found


def test_shared_error_classes_are_imported_from_baton_client_errors():
    assert _routes() == []
