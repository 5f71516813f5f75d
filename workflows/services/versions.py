"""A workflow version's steps, read once per process: a version is never changed once made
(``WorkflowVersion``), so a completion or a commit need not read its steps again. Keyed by
the version's id and creation time, so a version made again under a reused id (a database
restored or recreated) is read afresh."""

from __future__ import annotations

import threading

from ..models import Instance, WorkflowStep, WorkflowVersion

_MAX = 1024
_cache: dict[tuple, dict[str, WorkflowStep]] = {}
_lock = threading.Lock()


def version_steps(version: WorkflowVersion) -> dict[str, WorkflowStep]:
    """The version's steps by name, in their order (shared: read, never change, them)."""
    key = (version.pk, version.created_at)
    steps = _cache.get(key)
    if steps is None:
        steps = {s.name: s for s in WorkflowStep.objects.filter(version_id=version.pk).order_by("position")}
        with _lock:
            if len(_cache) >= _MAX:
                _cache.clear()
            _cache[key] = steps
    return steps


def instance_steps(instance: Instance) -> dict[str, WorkflowStep]:
    """The steps of the instance's version (``instance.version`` is read if not loaded)."""
    return version_steps(instance.version)
