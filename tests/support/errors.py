"""The harness's one error."""


class BenchmarkError(Exception):
    """A server, scratch environment or benchmark could not run (a server did not start, a
    request failed, a child process failed, ...)."""
