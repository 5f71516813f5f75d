"""Baton's one exception hierarchy, shared by the server and the client.

Every error has a stable machine-readable ``code`` and an HTTP ``status`` (class
attributes), a ``message`` for a person (by default the first line of the class
docstring) and ``details`` (every other field of the error body). The server raises these
classes and renders ``as_dict()`` with ``status``; the client raises the same classes from
what the server answered, by ``code``.

Every 409 is a :class:`Conflict`, every 404 a :class:`NotFound`. :data:`CLIENT_ONLY`
names the codes only the client raises (no answer came, or an answer that was not a Baton
error, or a held commit that outlasted the caller's patience).
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = [
    "BatonError",
    "InvalidInput",
    "NotAuthenticated",
    "PermissionDenied",
    "NotFound",
    "MethodNotAllowed",
    "NotAcceptable",
    "Conflict",
    "TransactionBackedOut",
    "TransactionNotActive",
    "PutInhibited",
    "GetInhibited",
    "QueueFull",
    "QueueInUse",
    "OptionsConflict",
    "AlreadyExists",
    "NotEmpty",
    "WorkflowConflict",
    "UnsettledDeliveries",
    "LockLost",
    "MessageTooLarge",
    "UnsupportedMediaType",
    "Throttled",
    "ServerError",
    "NetworkError",
    "RequestTimeout",
    "CommitTimeout",
    "OutboxFull",
    "ERRORS",
    "CLIENT_ONLY",
    "error_class",
    "error_from_body",
]


class BatonError(Exception):
    """Something went wrong."""

    code = "error"
    status: int | None = 400

    def __init__(self, message: str | None = None, **details: Any) -> None:
        self.message = message or (self.__doc__ or self.code).strip().splitlines()[0]
        self.details = details
        super().__init__(self.message)

    def as_dict(self) -> dict[str, Any]:
        """The error body: ``{"code", "message", ...details}``."""
        return {"code": self.code, "message": self.message, **self.details}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, status={self.status!r})"


class InvalidInput(BatonError):
    """The request is not valid."""

    code = "invalid"
    status = 400

    @property
    def errors(self) -> dict[str, list[str]]:
        """The bad fields and what is wrong with each."""
        return self.details.get("errors") or {}


class NotAuthenticated(BatonError):
    """Authentication credentials were not provided or are not valid."""

    code = "not_authenticated"
    status = 401


class PermissionDenied(BatonError):
    """You may not do that."""

    code = "permission_denied"
    status = 403


class NotFound(BatonError):
    """Not found."""

    code = "not_found"
    status = 404


class MethodNotAllowed(BatonError):
    """Method not allowed."""

    code = "method_not_allowed"
    status = 405


class NotAcceptable(BatonError):
    """The server cannot answer in the requested format."""

    code = "not_acceptable"
    status = 406


class Conflict(BatonError):
    """The request conflicts with the object's current state."""

    code = "conflict"
    status = 409


class TransactionBackedOut(Conflict):
    """The transaction was rolled back."""

    code = "transaction_backed_out"

    @property
    def reason(self) -> str | None:
        """Why, e.g. ``"client"``, ``"timeout"`` or ``"cascade from <id>"``."""
        return self.details.get("reason")

    @property
    def transaction(self) -> str | None:
        return self.details.get("transaction")


class TransactionNotActive(Conflict):
    """The transaction is no longer active."""

    code = "transaction_not_active"


class PutInhibited(Conflict):
    """Puts are disabled on this queue."""

    code = "put_inhibited"


class GetInhibited(Conflict):
    """Gets are disabled on this queue."""

    code = "get_inhibited"


class QueueFull(Conflict):
    """The queue is at its maximum depth."""

    code = "queue_full"


class QueueInUse(Conflict):
    """Another consumer holds the queue for exclusive input."""

    code = "queue_in_use"


class OptionsConflict(Conflict):
    """These options cannot be used together."""

    code = "options_conflict"


class AlreadyExists(Conflict):
    """An object with that name already exists."""

    code = "already_exists"


class NotEmpty(Conflict):
    """The object still holds messages or open units of work."""

    code = "not_empty"


class DefinitionsConflict(Conflict):
    """Some changes of a definitions document cannot be made, so none was (``refused`` lists
    each with its reason)."""

    code = "definitions_conflict"


class WorkflowConflict(Conflict):
    """The workflow instance or step is not in a state that allows this."""

    code = "workflow_conflict"


class UnsettledDeliveries(Conflict):
    """A STOMP COMMIT of a transaction holding pre-emptive deliveries not acknowledged under it
    (the transaction is rolled back: nothing is consumed unseen)."""

    code = "unsettled_deliveries"


class LockLost(BatonError):
    """The lock has expired or was never given: the message may already be with someone else."""

    code = "lock_lost"
    status = 410


class MessageTooLarge(BatonError):
    """The message is longer than the queue accepts."""

    code = "message_too_large"
    status = 413


class UnsupportedMediaType(BatonError):
    """The request body is not in a format the server reads."""

    code = "unsupported_media_type"
    status = 415


class Throttled(BatonError):
    """Too many requests: slow down."""

    code = "throttled"
    status = 429

    @property
    def retry_after(self) -> float | None:
        """The server's hint, in seconds, or None."""
        value = self.details.get("retry_after")
        return float(value) if value is not None else None


class ServerError(BatonError):
    """The server failed to handle the request."""

    code = "server_error"
    status = 500


class NetworkError(BatonError):
    """No answer: the server could not be reached or the connection broke."""

    code = "network_error"
    status = None


class RequestTimeout(NetworkError):
    """The server did not answer within the client's timeout."""

    code = "timeout"


class CommitTimeout(BatonError):
    """The commit is still held (``details["waiting_on"]`` lists the open upstream units of work)."""

    code = "commit_timeout"
    status = None


class OutboxFull(BatonError):
    """The client's outbox is at its size limit: the put was not kept (nothing was sent)."""

    code = "outbox_full"
    status = None


def _subclasses(cls: type[BatonError]) -> list[type[BatonError]]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


#: The codes only the client raises.
CLIENT_ONLY = frozenset({"server_error", "network_error", "timeout", "commit_timeout", "outbox_full"})

#: Every code the client knows, to its class: the classes of this module (a server's
#: subclasses, e.g. ``BrokerNotFound(NotFound)``, share their parent's code).
ERRORS: dict[str, type[BatonError]] = {cls.code: cls for cls in _subclasses(BatonError) if cls.__module__ == __name__}


def error_class(code: str) -> type[BatonError]:
    """The class for a code (the base class for a code this client does not know)."""
    return ERRORS.get(code, BatonError)


def _with_first_field(message: str, errors: Any) -> str:
    """The message with the first bad field and its reason (``"The request is not valid.
    name: Use 1 to 48 characters ..."``), so that a caller who prints the error learns what
    to fix; ``details["errors"]`` keeps all of them."""
    if not isinstance(errors, Mapping) or not errors:
        return message
    field, reasons = next(iter(errors.items()))
    reason = reasons[0] if isinstance(reasons, (list, tuple)) and reasons else reasons
    first = f"{field}: {reason}"
    return message if first in message else f"{message} {first}"


def error_from_body(status: int | None, body: Any, *, text: str = "", retry_after: str | None = None) -> BatonError:
    """The exception for an error answer (REST response or session reply): the class of its
    ``code`` (unknown codes give the base class, with that code and status); a body that is
    not a Baton error gives ServerError for 5xx, else the base class."""
    if isinstance(body, Mapping) and isinstance(body.get("code"), str):
        code = body["code"]
        message = str(body.get("message") or code)
        details = {k: v for k, v in body.items() if k not in ("code", "message", "re", "status")}
    else:
        code = "server_error" if status is not None and status >= 500 else f"http_{status}"
        message = text[:500] or code
        details = {}
    if retry_after is not None and "retry_after" not in details:
        details["retry_after"] = retry_after
    message = _with_first_field(message, details.get("errors"))
    cls = error_class(code)
    error = cls(message, **details)
    if error.code != code:
        error.code = code
    if error.status != status:
        error.status = status
    return error
