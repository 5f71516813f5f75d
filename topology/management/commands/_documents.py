"""What the definitions commands share: a document file parsed by the operations' models,
and a plan's changes as lines a person reads."""

from __future__ import annotations

import json
from typing import Any

from baton_client.errors import InvalidInput

from ...api import DefinitionsApply
from ...files import document_read

SIGNS = {"create": "+", "alter": "~", "delete": "-"}


def document_parsed(path: str, *, prune: bool = False, force: bool = False):
    """The file's document, validated as ``POST /api/definitions/apply/`` validates it."""
    data = document_read(path)
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} does not hold a document (an object).", errors={"file": ["Must be an object."]})
    return DefinitionsApply.parse({**data, "prune": prune, "force": force})


def _where(row: dict[str, Any]) -> str:
    return f"{row['broker']}/{row['name']}" if row["broker"] and row["kind"] != "broker" else row["name"]


def outcome_lines(outcome: dict[str, Any]) -> list[str]:
    """``+ queue QM1/Q1 {...}`` (create), ``~`` (alter), ``-`` (delete), ``!`` (refused)."""
    lines = []
    for change in outcome["changes"]:
        where = _where(change)
        attributes = f" {json.dumps(change['attributes'], sort_keys=True)}" if change["attributes"] else ""
        lines.append(f"{SIGNS[change['action']]} {change['kind']} {where}{attributes}")
    for refused in outcome["refused"]:
        lines.append(f"! {refused['kind']} {_where(refused)}: {refused['code']}: {refused['message']}")
    return lines


def invalid_lines(error: InvalidInput) -> list[str]:
    return [error.message] + [f"  {name}: {' '.join(texts)}" for name, texts in error.errors.items()]
