"""The staging directory: the only place ingests read from."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings

from .exceptions import SourceRefused


def staging_dir() -> Path:
    return Path(settings.BATON_STAGING_DIR).resolve()


def staging_path(source: str) -> Path:
    """The existing file or folder ``source`` names under the staging directory, symbolic
    links resolved; anything that resolves outside it (``..``, an absolute path elsewhere,
    a link out) is refused like a path that does not exist."""
    root = staging_dir()
    if not isinstance(source, str) or not source.strip() or "\x00" in source:
        raise SourceRefused("Name a file or folder in the staging directory.", errors={"source": ["Required."]})
    resolved = (root / source).resolve()
    if not resolved.is_relative_to(root):
        raise SourceRefused(f"{source!r} is outside the staging directory.",
                            errors={"source": ["Outside the staging directory."]})
    if not resolved.exists():
        raise SourceRefused(f"{source!r} does not exist in the staging directory.",
                            errors={"source": ["No such file or folder."]})
    return resolved
