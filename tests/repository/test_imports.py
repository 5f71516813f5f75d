"""The product's modules import each other one way: no import cycles (late imports inside
functions count too), services never import the API layer or a tasks module (the tasks
call the services; services hand work to the fleet by task name from ``..._on_commit``
hooks, config.celery.task_send), and nothing imports ``bench``."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("config", "transactions", "brokers", "pubsub", "dashboard", "ingest", "analytics", "spark_jobs")
#: The wake-up bus picks its implementation (Redis, PostgreSQL, sockets) when first used;
#: each implementation subclasses the bus defined beside the factory. The engine's queries
#: pick their database's dialect module when first used (``dialect()``); each dialect module
#: builds on the shared statements and column lists of the queries module beside it.
ALLOWED_CYCLES = [
    {
        "transactions.dialects",
        "transactions.dialects.postgresql",
        "transactions.dialects.sqlite",
        "transactions.queries",
    },
    {"brokers.dialects", "brokers.dialects.postgresql", "brokers.dialects.sqlite", "brokers.queries"},
    {
        "transactions.wakeup_bus",
        "transactions.wakeup_postgres",
        "transactions.wakeup_redis",
        "transactions.wakeup_sockets",
        "transactions.wakeups",
    },
]


def _modules() -> dict[str, Path]:
    found = {}
    for package in PRODUCT:
        for path in (ROOT / package).rglob("*.py"):
            if "node_modules" in path.parts or "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in edges:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_no_import_cycles():
    assert [c for c in _cycles(_graph()) if c not in ALLOWED_CYCLES] == []


def test_services_import_neither_the_api_layer_nor_tasks():
    def is_service(name: str) -> bool:
        return ".services" in f".{name}" or name.endswith((".definitions", ".sender", ".receiver"))

    def is_api_or_tasks(name: str) -> bool:
        parts = name.split(".")
        return "api" in parts or parts[-1] in ("tasks", "views", "consumers")

    found = sorted(
        f"{m} -> {t}"
        for m, targets in _graph().items()
        if is_service(m) and not is_api_or_tasks(m)
        for t in targets
        if is_api_or_tasks(t)
    )
    assert found == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
