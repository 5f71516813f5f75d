"""What every operation of the API is: one definition of its input and output, used by the
REST views, the WebSocket session and the OpenAPI schema alike.

An :class:`Operation` holds an ``Input`` and an ``Output`` model (pydantic: it validates a
message in about 3 µs where a DRF serializer takes 80–350 µs, which the session's hot path
cannot afford; see docs/performance.md), and ``perform(user, data)``, which checks the
caller's permission with the functions of ``brokers.permissions``, calls one service and
returns ``(status, body)``. Unknown fields are an error everywhere (``extra="forbid"``).
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar

from django.conf import settings
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from baton_client.errors import InvalidInput
from transactions.queries import hot_setting

from ...services.invalid_input import invalid


def _wait_bounded(value: float) -> float:
    if value > settings.BATON_MAX_WAIT_S:  # read per call: a deployment (or a test) may change it
        raise ValueError(f"At most {settings.BATON_MAX_WAIT_S:g} seconds.")
    return value


def _batch_bounded(value: int) -> int:
    if value > settings.BATON_MAX_BATCH:
        raise ValueError(f"At most {settings.BATON_MAX_BATCH}.")
    return value


def problems_refused(problems: Callable[[str], list[str]]) -> AfterValidator:
    """A validator raising the first of ``problems(value)`` as the field's error: a grammar
    kept beside what it describes (a topic string, a browse filter), checked at the boundary."""

    def check(value: str) -> str:
        if found := problems(value):
            raise ValueError(found[0])
        return value

    return AfterValidator(check)


#: Seconds to wait, 0 to BATON_MAX_WAIT_S.
Wait = Annotated[
    float,
    Field(ge=0, allow_inf_nan=False, description="Seconds to wait (0 to BATON_MAX_WAIT_S, by default 60)."),
    AfterValidator(_wait_bounded),
]
#: How many messages, 1 to BATON_MAX_BATCH.
Batch = Annotated[
    int, Field(ge=1, description="1 to BATON_MAX_BATCH (by default 1000)."), AfterValidator(_batch_bounded)
]

#: Session operation name -> the operation (filled by ``Operation.__init_subclass__``).
SESSION_OPERATIONS: dict[str, type[Operation]] = {}


class Model(BaseModel):
    """Every input and output: unknown fields are refused; names are the JSON names."""

    model_config = ConfigDict(extra="forbid", frozen=False, ser_json_bytes="base64")


def given(data: Model, *skip: str) -> dict[str, Any]:
    """The fields of a parsed input the caller gave (not those left at their defaults),
    without ``skip``: the keyword arguments a service takes."""
    return {name: getattr(data, name) for name in data.model_fields_set if name not in skip}


class Operation:
    """One operation of the API. Subclasses set ``Input`` and ``Output`` (a model, or a dict of
    status -> model), ``session`` (its name in the session protocol, or None) and ``perform``."""

    Input: ClassVar[type[Model]]
    Output: ClassVar[type[Model] | dict[int, type[Model]]]
    session: ClassVar[str | None] = None
    #: The fields REST takes from the path (the session takes them from the frame).
    path: ClassVar[tuple[str, ...]] = ()

    # REST: where the operation is served and how the OpenAPI schema names it. The views,
    # the URL patterns and the schema are made from these (``brokers.api.operations.rest``).
    #: The route under /api/ (Django's path syntax: ``brokers/<name:broker>/topics/``).
    route: ClassVar[str | None] = None
    #: The HTTP method.
    method: ClassVar[str] = "post"
    #: The route's URL name (for ``reverse``): one of the operations on a route names it.
    url_name: ClassVar[str | None] = None
    operation_id: ClassVar[str] = ""
    tag: ClassVar[str] = ""
    #: The error statuses it answers besides 401, 403 and 429 (which every operation may).
    errors: ClassVar[tuple[int, ...]] = ()
    #: Whether REST takes the input from the query string (GET, DELETE) instead of the body.
    query: ClassVar[bool] = False
    #: Request examples for the docs (drf-spectacular's OpenApiExample).
    examples: ClassVar[list | None] = None
    #: The schema's summary (by default the first line of the docstring).
    summary: ClassVar[str | None] = None
    #: Path parameters described for this operation only (field -> OpenApiParameter); the
    #: others come from ``brokers.api.schema``'s shared table.
    path_parameters: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # unique component names in the OpenAPI schema: PutInput, PutOutput, ...
        base = cls.__name__
        for attr, suffix in (("Input", "Input"), ("Output", "Output")):
            model = cls.__dict__.get(attr)
            if isinstance(model, type) and issubclass(model, BaseModel) and model.__name__ in ("Input", "Output"):
                model.__name__ = model.__qualname__ = f"{base}{suffix}"
        for name, model in list(vars(cls).items()):  # other models inside: PutOne, PutMany, ...
            if (
                isinstance(model, type)
                and issubclass(model, BaseModel)
                and model.__name__ == name
                and name not in ("Input", "Output")
            ):
                model.__name__ = model.__qualname__ = f"{base}{name}"
        if cls.session:
            SESSION_OPERATIONS[cls.session] = cls

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        """A permission check made on the raw request before it is validated, for operations
        whose validation could otherwise tell a stranger something (a 400 before a 403).
        Both transports call it; ``perform`` checks again on the validated input."""

    @classmethod
    def parse(cls, data: Any) -> Model:
        if not isinstance(data, dict):
            raise InvalidInput("The request body must be a JSON object.", errors={"body": ["Must be an object."]})
        try:
            return cls.Input.model_validate(data)
        except ValidationError as error:
            raise invalid(error) from None

    @classmethod
    def perform(cls, user, data: Model) -> tuple[int, dict[str, Any]]:
        raise NotImplementedError

    @classmethod
    def together(cls, data: Model) -> Any:
        """A session applies consecutive requests for which this gives the same key (not
        None) as one step, with ``perform_together`` (``brokers/api/session.py``). None: this
        request goes alone (every operation's default)."""
        return None

    @classmethod
    def perform_together(cls, user, inputs: list[Model]) -> list[tuple[int, dict[str, Any]]]:
        """Requests of the same ``together`` key, applied as one step: a reply each, in
        order. It raises, having changed nothing, when the step fails; the session then
        applies each request alone, so each answer is what it would have been alone."""
        raise NotImplementedError

    @classmethod
    def outputs(cls) -> dict[int, type[Model]]:
        return cls.Output if isinstance(cls.Output, dict) else {cls.success: cls.Output}

    #: The status of success when ``Output`` is one model.
    success: ClassVar[int] = 200

    @classmethod
    def checked(cls, status: int, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` as rendered, checked against the output definition where
        ``BATON_API_CHECK_REPLIES`` is on (the test suite): a field the definition does not
        name, or one of the wrong type, fails loudly instead of drifting from the docs."""
        if hot_setting("BATON_API_CHECK_REPLIES"):
            model = cls.outputs().get(status)
            if model is not None:
                model.model_validate(body)
        return body

    @classmethod
    def run(cls, user, data: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Validate, perform, check: what both transports call."""
        if isinstance(data, dict):
            cls.permitted_first(user, data)
        status, body = cls.perform(user, cls.parse(data))
        return status, cls.checked(status, body)


_BODIES: dict[type, type[Model] | None] = {}


def body_model(operation: type[Operation]) -> type[Model] | None:
    """The operation's input as REST's request body documents it: without the fields REST
    takes from the path (None when nothing is left)."""
    if operation not in _BODIES:
        from pydantic import create_model

        fields = {
            name: (info.annotation, info)
            for name, info in operation.Input.model_fields.items()
            if name not in operation.path
        }
        _BODIES[operation] = create_model(f"{operation.__name__}Body", __base__=Model, **fields) if fields else None
    return _BODIES[operation]
