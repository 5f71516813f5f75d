"""Put, get and browse."""

from .browse import message_browse
from .common import BrowseResult, GetResult, PutResult
from .get import message_get
from .put import message_put

__all__ = ["BrowseResult", "GetResult", "PutResult", "message_browse", "message_get", "message_put"]
