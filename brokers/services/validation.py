"""Model validation turned into Baton's ``invalid`` error with per-field details."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.backends.base.operations import BaseDatabaseOperations

from ..exceptions import InvalidInput

#: What each integer field holds on every database (PostgreSQL's ranges): SQLite would store
#: a larger number, and the same definition must mean the same on both.
_INTEGER_RANGES = BaseDatabaseOperations.integer_field_ranges


def _types_checked(instance: models.Model, exclude: list[str]) -> dict[str, list[str]]:
    """Values of the wrong JSON type (full_clean lets a null through on a field that may be
    blank, and would store an object as its text)."""
    errors: dict[str, list[str]] = {}
    for field in instance._meta.concrete_fields:
        if field.name in exclude or field.primary_key or field.is_relation:
            continue
        value = getattr(instance, field.attname)
        if isinstance(field, models.BooleanField):
            ok = isinstance(value, bool)
        elif isinstance(field, models.IntegerField):
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif isinstance(field, (models.CharField, models.TextField)):
            ok = isinstance(value, str)
        else:
            continue
        if not ok and not (value is None and field.null):
            kind = (
                "boolean"
                if isinstance(field, models.BooleanField)
                else "whole number"
                if isinstance(field, models.IntegerField)
                else "string"
            )
            errors[field.name] = [f"Must be a {kind}."]
    return errors


def _ranges_checked(instance: models.Model, exclude: list[str]) -> dict[str, list[str]]:
    """Whole numbers outside what the field holds on every database (full_clean checks the
    range of the database in use, and SQLite's is wider)."""
    errors: dict[str, list[str]] = {}
    for field in instance._meta.concrete_fields:
        if field.name in exclude or not isinstance(field, models.IntegerField) or field.is_relation:
            continue
        low, high = _INTEGER_RANGES.get(field.get_internal_type(), (None, None))
        value = getattr(instance, field.attname)
        if low is not None and isinstance(value, int) and not low <= value <= high:
            errors[field.name] = [f"Must be from {low} to {high}."]
    return errors


def model_validated(instance: models.Model, *, exclude: list[str] | None = None) -> None:
    errors = _types_checked(instance, exclude or [])
    if errors:
        raise InvalidInput("The request is not valid.", errors=errors)
    errors = {}
    try:
        instance.full_clean(exclude=exclude, validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        errors = exc.message_dict
    for name, problems in _ranges_checked(instance, exclude or []).items():
        errors.setdefault(name, problems)
    if errors:
        raise InvalidInput("The request is not valid.", errors=errors)


def unknown_fields_refused(changes: dict, allowed: set[str]) -> None:
    unknown = sorted(set(changes) - allowed)
    if unknown:
        raise InvalidInput(
            "The request is not valid.",
            errors={name: ["Unknown field."] for name in unknown},
        )
