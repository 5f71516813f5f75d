"""The product apps and the test harness (tests/support) import nothing from ``bench``: the
benchmarks measure the product, never the other way round, and the wheel does not hold
them."""

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = (
    "config",
    "transactions",
    "brokers",
    "pubsub",
    "workflows",
    "dashboard",
    "ingest",
    "analytics",
    "spark_jobs",
    "stomp_server",
    "tests/support",
)


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_no_product_module_imports_bench():
    offenders = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if "node_modules" not in path.parts
        for name in _imported(path)
        if name == "bench" or name.startswith("bench.")
    )
    assert offenders == []
