"""A virtual environment built the way a user builds one, without the test extras: the
project's wheel and the client's, built from a copy of the source tree, installed with the
``scaled`` extra into a fresh venv. What only the tests bring in (pytest's ``packaging``,
for one) is not in it, so a dependency missing from ``pyproject.toml`` shows.

Built once per test session (``user_venv`` in tests/conftest.py); pip's cache makes the
second build of a run (the PostgreSQL pass) fast."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: What a build does not need from the source tree (runtime files, tests, documentation).
NOT_BUILT = (
    "*.egg-info",
    ".git",
    ".venv",
    ".pytest_cache",
    ".hypothesis",
    "__pycache__",
    "build",
    "control",
    "docs",
    "metastore_db",
    "node_modules",
    "spark-warehouse",
    "tests",
    "var",
)


@dataclass(frozen=True)
class UserVenv:
    root: Path
    wheel: Path  #: the project's wheel
    client_wheel: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a user's shell: no PYTHONPATH, no test settings."""
        env = {
            name: value
            for name, value in os.environ.items()
            if name
            not in (
                "PYTHONPATH",
                "DJANGO_SETTINGS_MODULE",
                "DATABASE_URL",
                "BATON_TEST_DATABASE",
                "BATON_REDIS_URL",
                "CELERY_BROKER_URL",
                "VIRTUAL_ENV",
            )
        }
        return {**env, **extra}


def _run(args: list[str], **kwargs) -> None:
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, args))} failed ({done.returncode}):\n{done.stderr[-6000:]}\n{done.stdout[-2000:]}"
        )


def user_venv_build(base: Path) -> UserVenv:
    """Build it under ``base``; or, when an earlier session built it there (``.ready``),
    use that one. Sessions running at once (platform/test's two passes) take turns: the
    second waits for the first's build, then uses it."""
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        return _built(base)


def _built(base: Path) -> UserVenv:
    """The venv under ``base``, built if there is none ready; built once more if what was
    built lacks what a user's install has (the client's command and package): that was seen
    once in CI, cause not found; what the first build's pip said is printed for the next
    time (pytest shows it with a failure)."""
    if (base / ".ready").exists() and not _lacks(base / "venv"):
        return _made(base)
    _build(base)
    lacks = _lacks(base / "venv")
    if lacks:
        log = (base / "pip-install.log").read_text(errors="replace")
        print(f"user venv: the build lacks {lacks}; built again. Its pip said:\n{log[-4000:]}", file=sys.stderr)
        _build(base)
        lacks = _lacks(base / "venv")
        if lacks:
            raise AssertionError(f"the user venv lacks {lacks} after two builds:\n{log[-6000:]}")
    (base / ".ready").touch()
    return _made(base)


def _made(base: Path) -> UserVenv:
    wheels = base / "wheels"
    return UserVenv(
        root=base / "venv",
        wheel=next(wheels.glob("baton-*.whl")),
        client_wheel=next(wheels.glob("baton_client-*.whl")),
    )


def _lacks(root: Path) -> str:
    """What a user's install has that ``root`` does not ("" when nothing)."""
    if not (root / "bin" / "baton").exists():
        return "bin/baton"
    done = subprocess.run(
        [str(root / "bin" / "python"), "-c", "import baton_client, brokers"], capture_output=True, text=True
    )
    return done.stderr.strip().splitlines()[-1] if done.returncode else ""


def _build(base: Path) -> None:
    (base / ".ready").unlink(missing_ok=True)
    source, wheels, root = base / "source", base / "wheels", base / "venv"
    for partial in (source, wheels, root):  # what a build that did not finish left
        shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_BUILT))  # follows the assets' symlink
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--wheel-dir",
            str(wheels),
            str(source),
            str(source / "clients" / "python"),
        ]
    )
    wheel = next(wheels.glob("baton-*.whl"))
    client_wheel = next(wheels.glob("baton_client-*.whl"))
    venv.EnvBuilder(with_pip=True).create(root)
    python = str(root / "bin" / "python")
    install = [
        python,
        "-m",
        "pip",
        "install",
        "--no-compile",
        "--disable-pip-version-check",
        str(client_wheel),
        f"{wheel}[scaled]",
    ]
    with open(base / "pip-install.log", "w") as log:
        done = subprocess.run(install, cwd=base, stdout=log, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        raise AssertionError(
            f"{' '.join(install)} failed ({done.returncode}):\n{(base / 'pip-install.log').read_text()[-6000:]}"
        )
    # bytecode as pip would write it, but not for PySpark's 2,000 modules (the platform's
    # processes do not import it; its jobs run in processes of their own): without it every
    # process started from this venv compiles what it imports, again and again when
    # PYTHONDONTWRITEBYTECODE is set
    _run(
        [
            python,
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            "-x",
            r"/(pyspark|py4j)/",
            str(next((root / "lib").glob("python3*/site-packages"))),
        ]
    )
