"""Peek-locks: complete, abandon, renew, dead-letter; their one definition."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.conf import settings
from pydantic import AfterValidator, Field

from ... import permissions as may
from ...services.locks import lock_abandon, lock_complete, lock_dead_letter, lock_renew, locks_complete
from .. import schema as doc
from .base import Model, Operation

Token = Annotated[str, Field(max_length=64, description="The lock token of a peek-locked message.")]
Outcome = Literal["completed", "pending_commit", "available", "dead_lettered"]


def _reason_given(value: str) -> str:
    """A dead-letter reason as recorded: without surrounding blanks, and never blank."""
    value = value.strip()
    if not value:
        raise ValueError("Must not be blank.")
    return value


#: Why the holder dead-letters the message (docs/semantics.md): required, never blank.
Reason = Annotated[
    str,
    Field(min_length=1, max_length=200, description="Why: 1 to 200 characters, not blank (recorded stripped)."),
    AfterValidator(_reason_given),
]


def _tokens_bounded(value: list[str]) -> list[str]:
    if len(value) > settings.BATON_MAX_BATCH:
        raise ValueError(f"At most {settings.BATON_MAX_BATCH}.")
    return value


class LockOutcome(Model):
    lock_token: str
    outcome: Outcome


class LockComplete(Operation):
    """Complete: the message is gone (when the unit of work named commits)."""

    route = "locks/<id:token>/complete/"
    url_name = "lock-complete"
    operation_id = "locks_complete"
    tag = "locks"
    errors = (400, 404, 409, 410, 413)

    session = "complete"
    path = ("lock_token",)

    class Input(Model):
        lock_token: Token
        transaction: Annotated[str, Field(max_length=64)] | None = None

    Output = LockOutcome

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_lock(user, token=data.lock_token)
        outcome = lock_complete(token=data.lock_token, transaction_id=data.transaction, user=user)
        return 200, {"lock_token": data.lock_token, "outcome": outcome}


class LocksComplete(Operation):
    """Complete several peek-locked messages, all or none: under a unit of work each is gone
    when it commits; without one, now (durably). Not in the REST or session API: STOMP's ACKs
    of one transaction arrive this way (docs/stomp.md)."""

    class Input(Model):
        lock_tokens: Annotated[list[Token], Field(min_length=1), AfterValidator(_tokens_bounded)]
        transaction: Annotated[str, Field(max_length=64)] | None = None

    class Output(Model):
        lock_tokens: list[str]
        outcome: Outcome

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_locks(user, tokens=data.lock_tokens)
        outcome = locks_complete(tokens=data.lock_tokens, transaction_id=data.transaction, user=user)
        return 200, {"lock_tokens": data.lock_tokens, "outcome": outcome}


class LockAbandon(Operation):
    """Abandon: the message is available again (its delivery count stays raised)."""

    route = "locks/<id:token>/abandon/"
    url_name = "lock-abandon"
    operation_id = "locks_abandon"
    tag = "locks"
    errors = (404, 409, 410)

    session = "abandon"
    path = ("lock_token",)

    class Input(Model):
        lock_token: Token

    Output = LockOutcome

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_lock(user, token=data.lock_token)
        return 200, {"lock_token": data.lock_token, "outcome": lock_abandon(token=data.lock_token)}


class LockRenew(Operation):
    """Renew: the lock lasts the queue's lock duration from now."""

    route = "locks/<id:token>/renew/"
    url_name = "lock-renew"
    operation_id = "locks_renew"
    tag = "locks"
    errors = (404, 409, 410)

    session = "renew"
    path = ("lock_token",)

    class Input(Model):
        lock_token: Token

    class Output(Model):
        lock_token: str
        locked_until: str

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_lock(user, token=data.lock_token)
        message = lock_renew(token=data.lock_token)
        return 200, {"lock_token": data.lock_token, "locked_until": message.locked_until.isoformat()}


class LockDeadLetter(Operation):
    """Dead-letter: move the message to the broker's dead-letter queue with a reason."""

    route = "locks/<id:token>/dead-letter/"
    url_name = "lock-dead-letter"
    operation_id = "locks_dead_letter"
    tag = "locks"
    errors = (400, 404, 409, 410, 413)
    examples = doc.DEAD_LETTER_EXAMPLES

    session = "dead_letter"
    path = ("lock_token",)

    class Input(Model):
        lock_token: Token
        reason: Reason

    class Output(LockOutcome):
        queue: str = Field(description="The queue the message was moved to.")

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_lock(user, token=data.lock_token)
        message = lock_dead_letter(token=data.lock_token, reason=data.reason)
        return 200, {"lock_token": data.lock_token, "outcome": "dead_lettered", "queue": message.queue.name}
