"""What the administrator commands (define_/alter_/display_/delete_ broker and queue, put,
get, browse) share: command-line options generated from the models, service errors
turned into one-line command errors, and output formatting.

The commands validate what they are given through the API operation's ``Input`` (as REST
and the session do: one definition, one set of errors) and then call the service layer;
they never save models themselves.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from django.core.management.base import CommandError
from django.db import DatabaseError, models

from baton_client.errors import BatonError

#: Exit code of a command whose request failed (the service refused it, the database failed).
ERROR = 1

_YES = {"yes", "y", "true", "t", "on", "1", "enabled"}
_NO = {"no", "n", "false", "f", "off", "0", "disabled"}


def yes_no(text: str) -> bool:
    """argparse type for ``--put-enabled yes|no``."""
    value = str(text).strip().lower()
    if value in _YES:
        return True
    if value in _NO:
        return False
    raise argparse.ArgumentTypeError(f"expected yes or no, not {text!r}")


def option_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def attribute_options_add(
    parser,
    model: type[models.Model],
    fields: Iterable[str],
    *,
    with_defaults: bool,
    defaults_note: dict[str, str] | None = None,
) -> None:
    """One option per attribute, generated from the model's fields so that the commands
    follow the services' field lists: ``--put-enabled`` / ``--no-put-enabled`` /
    ``--put-enabled yes|no`` for booleans, whole numbers for integer fields, text for the
    rest. Choices are listed in the help and checked by the operation's input. Options not given are
    absent from the parsed options (argparse.SUPPRESS), so only what was given is passed on."""
    group = parser.add_argument_group("attributes")
    for name in sorted(fields):
        field = model._meta.get_field(name)
        parts = []
        if field.help_text:
            parts.append(str(field.help_text).rstrip("."))
        if field.choices:
            parts.append("one of " + ", ".join(str(value) for value, _ in field.choices))
        if with_defaults:
            if defaults_note and name in defaults_note:
                parts.append(f"default: {defaults_note[name]}")
            elif field.has_default():
                default = field.get_default()
                if isinstance(default, bool):
                    default = "yes" if default else "no"
                if default != "":
                    parts.append(f"default: {default}")
        help_text = "; ".join(parts) or None
        flag = option_name(name)
        if isinstance(field, models.BooleanField):
            group.add_argument(
                flag,
                dest=name,
                nargs="?",
                const=True,
                type=yes_no,
                default=argparse.SUPPRESS,
                metavar="yes|no",
                help=help_text,
            )
            group.add_argument(
                "--no-" + flag[2:],
                dest=name,
                action="store_const",
                const=False,
                default=argparse.SUPPRESS,
                help=f"same as {flag} no",
            )
        elif isinstance(field, models.IntegerField):
            group.add_argument(flag, dest=name, type=int, default=argparse.SUPPRESS, metavar="N", help=help_text)
        else:
            group.add_argument(flag, dest=name, type=str, default=argparse.SUPPRESS, metavar="TEXT", help=help_text)


def attributes_given(options: dict[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    """The attribute options that were given, by field name."""
    return {name: options[name] for name in sorted(fields) if name in options and options[name] is not None}


# --- errors ---------------------------------------------------------------------------


def error_line(exc: BatonError) -> str:
    """A service error on one line: its message, what was wrong with each field, its code."""
    text = exc.message.strip()
    errors = exc.details.get("errors") if isinstance(exc.details, dict) else None
    if isinstance(errors, dict) and errors:
        problems = []
        for name, messages in errors.items():
            if not isinstance(messages, (list, tuple)):
                messages = [messages]
            if name in text or all(str(m).strip() in text for m in messages):  # the message already says it
                continue
            problems.append(f"{name}: " + ", ".join(str(m).strip().rstrip(".") for m in messages))
        if problems:
            text = text.rstrip(".") + ": " + "; ".join(problems) + "."
    return " ".join(f"{text} [{exc.code}]".split())


@contextmanager
def service_errors(returncode: int = ERROR) -> Iterator[None]:
    """Turn what a service raises into a CommandError (one line on stderr, a non-zero exit)."""
    try:
        yield
    except BatonError as exc:
        raise CommandError(error_line(exc), returncode=returncode) from exc
    except DatabaseError as exc:
        raise CommandError(" ".join(f"Database error: {exc}".split()), returncode=returncode) from exc


# --- names ----------------------------------------------------------------------------


def is_generic(name: str | None) -> bool:
    """A generic name (``*``, ``QM*``, ``APP.*.IN``) selects every object it matches, as in
    runmqsc. ``*`` cannot be part of a real name."""
    return name is None or "*" in name


def name_matches(pattern: str | None, name: str) -> bool:
    return pattern is None or fnmatch.fnmatchcase(name, pattern)


# --- output ---------------------------------------------------------------------------


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def table(rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> str:
    """Rows as an aligned text table; ``columns`` are (heading, key) pairs."""
    cells = [[heading for heading, _ in columns]] + [[cell(row.get(key)) for _, key in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = ["  ".join(text.ljust(width) for text, width in zip(line, widths)).rstrip() for line in cells]
    return "\n".join(lines)


def attributes_listing(data: dict[str, Any]) -> str:
    """One object, one attribute per line (as runmqsc's DISPLAY … ALL)."""
    width = max(len(key) for key in data)
    return "\n".join(f"{key.ljust(width)}  {cell(value)}".rstrip() for key, value in data.items())


def json_dumps(data: Any, *, indent: int | None = None) -> str:
    return json.dumps(data, indent=indent, ensure_ascii=False, sort_keys=False)
