"""Every REST route is made from one operation's definition: each operation that declares a
route is served there, with its method, and every route under /api/ (but the schema and the
session) is such an operation's."""

from __future__ import annotations

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from brokers.api.operations import Operation

pytestmark = pytest.mark.once

NOT_OPERATIONS = ("api/schema/", "api/session/")
#: The index of the API's roots and docs (brokers/api/index.py): a page, not an operation.
INDEX = "api/"


def _patterns(patterns, prefix: str = ""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _patterns(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern


def _operations(cls=Operation):
    for sub in cls.__subclasses__():
        yield sub
        yield from _operations(sub)


def test_every_operation_with_a_route_is_served_there_and_every_api_route_is_an_operation():
    served = {}
    for route, pattern in _patterns(get_resolver().url_patterns):
        if route.startswith("api/") and route != INDEX and not route.startswith(NOT_OPERATIONS):
            operations = getattr(pattern.callback, "view_class", None)
            assert operations is not None and getattr(operations, "operations", None), route
            served[route] = operations.operations
    declared = [op for op in _operations() if op.__dict__.get("route")]
    assert declared
    for op in declared:
        assert served.get("api/" + op.route, {}).get(op.method) is op, (op, op.route, op.method)
    ids = [op.operation_id for op in declared]
    assert len(ids) == len(set(ids))
