"""The rule for every name an administrator gives: brokers, queues, topic objects,
subscriptions, channels, workflows and steps (API.md, "Conventions").

1 to 48 characters of ``A-Z a-z 0-9 . _ / % -``, case-sensitive. The hyphen is there because
STOMP, AMQP and MQTT clients name their destinations with it (``/queue/ack-test``). This
module is the one place the rule is written; everything else (models, pydantic inputs, URL
converters, the OpenAPI schema, STOMP headers, command help) derives from it. It imports
nothing of Django's but its validator class, so sans-I/O code may use it.
"""

from __future__ import annotations

import re

from django.core.validators import RegexValidator

#: The characters a name may hold, as a regular-expression class body ('-' last: literal).
NAME_CHARACTERS = r"A-Za-z0-9._/%\-"
#: The rule in words, for error messages and help texts.
NAME_RULE = "1 to 48 characters of A-Z a-z 0-9 . _ / % -"
#: A whole name.
NAME_PATTERN = rf"^[{NAME_CHARACTERS}]{{1,48}}$"
NAME = re.compile(NAME_PATTERN)
#: A name inside a URL path (Django's converter: no anchors).
NAME_IN_PATH = rf"[{NAME_CHARACTERS}]{{1,48}}"
#: One path segment of a name in the OpenAPI schema: the rule without '/' (sent as %2F).
PATH_SEGMENT_PATTERN = r"^[A-Za-z0-9._%\-]{1,48}$"
#: The message a person reads when a name breaks the rule.
NAME_MESSAGE = f"Use {NAME_RULE}."

name_validator = RegexValidator(NAME_PATTERN, NAME_MESSAGE.replace("%", "%%"))  # %%: Django formats it


def is_name(value: object) -> bool:
    """True when ``value`` is a string that follows the rule."""
    return isinstance(value, str) and NAME.match(value) is not None
