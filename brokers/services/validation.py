"""Model validation turned into Baton's ``invalid`` error with per-field details."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models

from ..exceptions import InvalidInput


def model_validated(instance: models.Model, *, exclude: list[str] | None = None) -> None:
    try:
        instance.full_clean(exclude=exclude, validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        raise InvalidInput("The request is not valid.", errors=exc.message_dict) from exc


def unknown_fields_refused(changes: dict, allowed: set[str]) -> None:
    unknown = sorted(set(changes) - allowed)
    if unknown:
        raise InvalidInput(
            "The request is not valid.", errors={name: ["Unknown field."] for name in unknown},
        )
