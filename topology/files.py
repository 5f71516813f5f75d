"""Definitions documents as files: JSON always, YAML when the name ends in ``.yaml`` or ``.yml``.
A JSON document is written the same way every time (two-space indents, the document's own
order, a final newline): the same definitions give the same bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from baton_client.errors import InvalidInput


def _yaml(path: str | Path) -> bool:
    return str(path).lower().endswith((".yaml", ".yml"))


def document_text(document: dict[str, Any], *, yaml_form: bool = False) -> str:
    if yaml_form:
        return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def document_read(path: str | Path) -> Any:
    """A file's document as data (its validation is the operations' models')."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"Cannot read {path}: {exc.strerror}.", errors={"file": [str(exc.strerror)]}) from None
    try:
        return yaml.safe_load(text) if _yaml(path) else json.loads(text)
    except (ValueError, yaml.YAMLError) as exc:
        form = "YAML" if _yaml(path) else "JSON"
        raise InvalidInput(f"{path} is not valid {form}: {exc}", errors={"file": [str(exc)]}) from None


def document_write(document: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(document_text(document, yaml_form=_yaml(path)), encoding="utf-8")
