"""The staging directory: the only place ingests read from."""

from __future__ import annotations

import os
import re
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
        raise SourceRefused(
            f"{source!r} is outside the staging directory.", errors={"source": ["Outside the staging directory."]}
        )
    if not resolved.exists():
        raise SourceRefused(
            f"{source!r} does not exist in the staging directory.", errors={"source": ["No such file or folder."]}
        )
    return resolved


#: Files and folders an ingest of a folder skips (as ``spark_jobs.ingest.source_files``).
HIDDEN = re.compile(r"^[._]")


def _inside(root: Path, path: Path, shown: str) -> Path:
    resolved = path.resolve()
    if not resolved.is_relative_to(root):
        raise SourceRefused(
            f"{shown!r} leads outside the staging directory (a symbolic link).",
            errors={"source": [f"{shown}: leads outside the staging directory."]},
        )
    return resolved


def staging_files(source: str) -> list[Path]:
    """Every file an ingest of ``source`` reads, each resolved: the file itself, or the
    visible files under the folder. Any of them (or a folder on the way) that is a symbolic
    link leading outside the staging directory refuses the whole source, as does one
    ``source`` itself leads through (:func:`staging_path`)."""
    root = staging_dir()
    path = staging_path(source)
    if path.is_file():
        return [path]
    found: list[Path] = []
    for folder, dirs, files in os.walk(path, followlinks=False):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if not HIDDEN.match(d))
        for name in dirs:
            if (here / name).is_symlink():
                _inside(root, here / name, str((here / name).relative_to(root)))
        for name in sorted(files):
            if not HIDDEN.match(name):
                entry = here / name
                resolved = _inside(root, entry, str(entry.relative_to(root)))
                if resolved.is_file():
                    found.append(resolved)
    return sorted(set(found))
