from baton_client.errors import InvalidInput, NotFound


class IngestNotFound(NotFound):
    """No such ingest."""


class SourceRefused(InvalidInput):
    """The source is not a file or folder inside the staging directory."""
