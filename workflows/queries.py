"""The workflow layer's statements on a step's path (its completion and its instance's
start), as the engine writes its own (``transactions.queries``, ``brokers.queries``): named
constants, with the locks each takes beside it, sent through the engine's seam
(``transactions.queries.cursor``). Django's query building cost more server CPU per
statement than the database spent running it: a completion read its instances, locked
them, locked its steps and looked at its requests through the ORM, two thirds of a step's
server time (docs/workflows.md, "Benchmark").

Rows come back as the models their callers take, built as the engine builds its own
(``transactions.queries.model_instance``): an ``Instance`` with all its columns, and its
``broker``, ``workflow`` and ``version`` holding what the workflow layer reads of them (ids,
names, the version's number, deadline and creation time); an ``InstanceStep`` with the
columns a completion reads. A column not read is deferred, as in ``QuerySet.only``: the ORM
reads it if asked.

``IN`` lists take one ``%s`` per value (``_marks``); PostgreSQL locks with ``FOR UPDATE``,
SQLite's write lock (``BEGIN IMMEDIATE``) is held already."""

from __future__ import annotations

from collections.abc import Iterable

from brokers.models import Broker, Message
from transactions import queries as txn_queries
from transactions.queries import model_instance
from transactions.dialects import dialect

from .models import Instance, InstanceStep, StepRequest, StepState, Workflow, WorkflowVersion

_INSTANCE_COLUMNS = [f.column for f in Instance._meta.concrete_fields]

#: An instance's row with its broker's and workflow's names and its version's facts, by id,
#: in id order. No lock.
_INSTANCES = (
    f"SELECT {', '.join('i.' + c for c in _INSTANCE_COLUMNS)}, b.name, w.name, v.version, v.deadline_ms, v.created_at "
    f"FROM {Instance._meta.db_table} i "
    f"JOIN {Broker._meta.db_table} b ON b.id = i.broker_id "
    f"JOIN {Workflow._meta.db_table} w ON w.id = i.workflow_id "
    f"JOIN {WorkflowVersion._meta.db_table} v ON v.id = i.version_id "
    "WHERE i.id IN ({marks}) ORDER BY i.id"
)
# Locked (``instances_read``, ``ROW_LOCK_OF`` "i"; PostgreSQL): the instances' rows (not their
# broker's, workflow's or version's), ``FOR UPDATE``, in id order.

#: Locked (the dialect's ``ROW_LOCK``; PostgreSQL): the named steps' rows of the instances,
#: ``FOR UPDATE``, in (instance, position) order.
_STEPS_LOCKED = (
    'SELECT id, instance_id, position, name, state, "transaction", compensation_transaction '
    f"FROM {InstanceStep._meta.db_table} "
    "WHERE instance_id IN ({instances}) AND name IN ({names}) ORDER BY instance_id, position"
)

#: The open requests (or compensation requests) of the instances, each with whether the
#: unit of work has got it (a message of that id whose get is under it). No lock: a
#: request's row is written only by the holder of its instance's row.
_REQUESTS_GOTTEN = (
    "SELECT r.instance_id, r.step, r.msg_id, "
    f"EXISTS (SELECT 1 FROM {Message._meta.db_table} m WHERE m.get_transaction_id = %s AND m.msg_id = r.msg_id) "
    f"FROM {StepRequest._meta.db_table} r "
    'WHERE r.instance_id IN ({marks}) AND r.compensation = %s AND r."open" = %s ORDER BY r.id'
)


def _marks(values) -> str:
    return ", ".join(["%s"] * len(values))


_INSTANCE_DATETIMES = [i for i, c in enumerate(_INSTANCE_COLUMNS) if c in ("started_at", "progress_at", "ended_at")]
_INSTANCE_ATTNAMES = [f.attname for f in Instance._meta.concrete_fields]


def _instance(row) -> Instance:
    n = len(_INSTANCE_COLUMNS)
    values = list(row[:n])
    for i in _INSTANCE_DATETIMES:
        values[i] = txn_queries.aware(values[i])
    instance_id, broker_id, workflow_id, version_id = values[:4]
    broker_name, workflow_name, version, deadline_ms, created_at = row[n:]
    related = {
        "broker": model_instance(Broker, {"id": broker_id, "name": broker_name}),
        "workflow": model_instance(Workflow, {"id": workflow_id, "broker_id": broker_id, "name": workflow_name}),
        "version": _version(version_id, workflow_id, version, deadline_ms, created_at),
    }
    return model_instance(Instance, dict(zip(_INSTANCE_ATTNAMES, values)), related)


def _version(version_id, workflow_id, version, deadline_ms, created_at) -> WorkflowVersion:
    """A ``WorkflowVersion`` as a statement read its columns (no steps)."""
    return model_instance(
        WorkflowVersion,
        {
            "id": version_id,
            "workflow_id": workflow_id,
            "version": version,
            "deadline_ms": deadline_ms,
            "created_at": txn_queries.aware(created_at),
        },
    )


def instances_read(*, instance_ids: Iterable[str], lock: bool = False) -> dict[str, Instance]:
    """The instances found of ``instance_ids``, by id (in id order); ``lock``: their rows
    locked (PostgreSQL ``FOR UPDATE``) until the database transaction ends."""
    ids = sorted(set(instance_ids))
    if not ids:
        return {}
    sql = _INSTANCES + dialect().ROW_LOCK_OF.format(alias="i") if lock else _INSTANCES
    with txn_queries.cursor() as c:
        c.execute(sql.format(marks=_marks(ids)), ids)
        rows = c.fetchall()
    return {row[0]: _instance(row) for row in rows}


def steps_locked(*, instances: dict[str, Instance], names: Iterable[str]) -> dict[tuple[str, str], InstanceStep]:
    """The steps named ``names`` of the instances (each row's ``instance`` the one given), by
    (instance id, name), locked (PostgreSQL ``FOR UPDATE``) in (instance, position) order.
    The caller holds the instances' rows."""
    ids, names = sorted(instances), sorted(set(names))
    sql = _STEPS_LOCKED.format(instances=_marks(ids), names=_marks(names)) + dialect().ROW_LOCK
    with txn_queries.cursor() as c:
        c.execute(sql, [*ids, *names])
        rows = c.fetchall()
    found = {}
    for pk, instance_id, position, name, state, transaction, compensation_transaction in rows:
        found[(instance_id, name)] = model_instance(
            InstanceStep,
            {
                "id": pk,
                "instance_id": instance_id,
                "position": position,
                "name": name,
                "state": state,
                "transaction": transaction,
                "compensation_transaction": compensation_transaction,
            },
            {"instance": instances[instance_id]},
        )
    return found


def requests_gotten(
    *, instance_ids: Iterable[str], transaction_id: str, compensation: bool
) -> dict[tuple[str, str], list[tuple[str, bool]]]:
    """The open requests (``compensation``: compensation requests) of the instances, by
    (instance id, step): each request's message id and whether unit of work
    ``transaction_id`` has got it. The caller holds the instances' rows."""
    ids = sorted(set(instance_ids))
    with txn_queries.cursor() as c:
        c.execute(_REQUESTS_GOTTEN.format(marks=_marks(ids)), [transaction_id, *ids, compensation, True])
        rows = c.fetchall()
    found: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    for instance_id, step, msg_id, gotten in rows:
        found.setdefault((instance_id, step), []).append((msg_id, bool(gotten)))
    return found


#: A workflow's row by broker and name, with its broker's id and its current version's
#: facts. Locks (PostgreSQL): the workflow's row (not its broker's or version's), ``FOR
#: UPDATE``: a start holds it against an alteration or a deletion of the workflow.
_WORKFLOW_CURRENT = (
    "SELECT w.id, w.broker_id, v.id, v.version, v.deadline_ms, v.created_at "
    f"FROM {Workflow._meta.db_table} w "
    f"JOIN {Broker._meta.db_table} b ON b.id = w.broker_id "
    f"JOIN {WorkflowVersion._meta.db_table} v ON v.workflow_id = w.id AND v.version = w.version "
    "WHERE b.name = %s AND w.name = %s"
)

#: A new instance's row (nothing reads it before the statement after it: deferred).
_INSTANCE_INSERT = (
    f"INSERT INTO {Instance._meta.db_table} ({', '.join(_INSTANCE_COLUMNS)}) VALUES ({_marks(_INSTANCE_COLUMNS)})"
)
_STEP_INSERT_COLUMNS = [
    "instance_id",
    "position",
    "name",
    "state",
    '"transaction"',
    "compensation_transaction",
    "fail_reason",
    "fail_transaction",
]
#: A new instance's steps' rows, one ``VALUES`` tuple per step (deferred).
_STEPS_INSERT = f"INSERT INTO {InstanceStep._meta.db_table} ({', '.join(_STEP_INSERT_COLUMNS)}) VALUES "


def workflow_current(*, broker: str, name: str, lock: bool) -> Workflow | None:
    """The workflow ``name`` of ``broker`` (``lock``: its row locked, PostgreSQL ``FOR
    UPDATE``, until the database transaction ends), ``broker`` (id, name) and ``current``
    (its current ``WorkflowVersion``: id, number, deadline, creation time) set on it; None
    if there is none."""
    sql = _WORKFLOW_CURRENT + dialect().ROW_LOCK_OF.format(alias="w") if lock else _WORKFLOW_CURRENT
    with txn_queries.cursor() as c:
        c.execute(sql, [broker, name])
        row = c.fetchone()
    if row is None:
        return None
    workflow_id, broker_id, version_id, version, deadline_ms, created_at = row
    workflow = model_instance(
        Workflow,
        {"id": workflow_id, "broker_id": broker_id, "name": name, "version": version},
        {"broker": model_instance(Broker, {"id": broker_id, "name": broker})},
    )
    workflow.current = _version(version_id, workflow_id, version, deadline_ms, created_at)
    return workflow


def instance_insert(*, instance: Instance, steps: list[tuple[int, str]]) -> None:
    """Write a new instance's row and its steps' rows (``steps``: (position, name) each,
    ``pending``), deferred."""
    values = [getattr(instance, f.attname) for f in Instance._meta.concrete_fields]
    for i, column in enumerate(_INSTANCE_COLUMNS):
        if column in ("started_at", "progress_at", "ended_at"):
            values[i] = txn_queries.dt_param(values[i])
    txn_queries.deferred(_INSTANCE_INSERT, values)
    row = f"({_marks(_STEP_INSERT_COLUMNS)})"
    txn_queries.deferred(
        _STEPS_INSERT + ", ".join([row] * len(steps)),
        [v for position, name in steps for v in (instance.pk, position, name, StepState.PENDING.value, "", "", "", "")],
    )


#: What a commit of units of work settles (the resource manager's commit hook,
#: ``WorkflowStore.resources_commit``), in one statement: the steps completed under them
#: (``in_flight``), failed under them, or whose compensation they reported
#: (``compensating``), each column indexed; then (a row of NULLs but its second column) the
#: instances they started. No lock: the hook then locks the instances (``instances_read``);
#: a step's row is written only by the holder of its instance's row.
_COMMIT_SETTLES = (
    'SELECT id, instance_id, position, name, state, "transaction", fail_transaction, fail_reason, '
    f"compensation_transaction FROM {InstanceStep._meta.db_table} "
    """WHERE ("transaction" IN ({marks}) AND state = %s) OR fail_transaction IN ({marks}) """
    "OR (compensation_transaction IN ({marks}) AND state = %s) "
    f"UNION ALL SELECT NULL, id, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM {Instance._meta.db_table} "
    "WHERE start_transaction IN ({marks})"
)
_SETTLED_COLUMNS = [
    "id",
    "instance_id",
    "position",
    "name",
    "state",
    "transaction",
    "fail_transaction",
    "fail_reason",
    "compensation_transaction",
]


def commit_settles(*, transaction_ids: list[str]) -> tuple[list[str], list[InstanceStep]]:
    """What the commit of ``transaction_ids`` settles: the instances they started (ids) and
    the steps they completed, failed or compensated (rows with the columns of
    ``_SETTLED_COLUMNS``), as ``_COMMIT_SETTLES`` finds them."""
    marks = _marks(transaction_ids)
    with txn_queries.cursor() as c:
        c.execute(
            _COMMIT_SETTLES.format(marks=marks),
            [
                *transaction_ids,
                StepState.IN_FLIGHT.value,
                *transaction_ids,
                *transaction_ids,
                StepState.COMPENSATING.value,
                *transaction_ids,
            ],
        )
        rows = c.fetchall()
    started = [row[1] for row in rows if row[0] is None]
    steps = [model_instance(InstanceStep, dict(zip(_SETTLED_COLUMNS, row))) for row in rows if row[0] is not None]
    return started, steps


#: The commit hook's writes (``WorkflowStore.resources_commit``), each under the instance's
#: row it holds; nothing reads them before the commit ends (deferred: on PostgreSQL they
#: travel with the hook's next statement).
STEP_COMMITTED = (
    f"UPDATE {InstanceStep._meta.db_table} SET state = %s, commit_order = %s, committed_at = %s WHERE id = %s"
)
STEP_FAIL_SETTLED = f"UPDATE {InstanceStep._meta.db_table} SET fail_transaction = '', fail_reason = '' WHERE id = %s"
STEP_COMPENSATED = f"UPDATE {InstanceStep._meta.db_table} SET state = %s, compensated_at = %s WHERE id = %s"
REQUESTS_CLOSED = (
    f'UPDATE {StepRequest._meta.db_table} SET "open" = %s '
    'WHERE instance_id = %s AND step = %s AND compensation = %s AND "open" = %s'
)
_REQUESTS_PUT_SETTLED = (
    f"UPDATE {StepRequest._meta.db_table} SET put_transaction = '' WHERE put_transaction IN ({{marks}})"
)
_INSTANCES_STARTED = (
    f"UPDATE {Instance._meta.db_table} SET start_transaction = '', progress_at = %s WHERE id IN ({{marks}})"
)
INSTANCE_PROGRESSED = f"UPDATE {Instance._meta.db_table} SET commits = %s, progress_at = %s WHERE id = %s"
INSTANCE_ENDED = (
    f"UPDATE {Instance._meta.db_table} SET commits = %s, progress_at = %s, state = %s, ended_at = %s WHERE id = %s"
)
INSTANCE_STATE = f"UPDATE {Instance._meta.db_table} SET state = %s WHERE id = %s"


def commit_settled(*, transaction_ids: list[str], started: list[str], at) -> None:
    """The commit's writes that do not depend on what it settles: the requests put under
    ``transaction_ids`` are no longer waiting for it, the instances ``started`` have started
    (``at``: a ``dt_param``). Deferred."""
    txn_queries.deferred(_REQUESTS_PUT_SETTLED.format(marks=_marks(transaction_ids)), transaction_ids)
    if started:
        txn_queries.deferred(_INSTANCES_STARTED.format(marks=_marks(started)), [at, *started])
