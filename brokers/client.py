"""The Python client moved to its own distribution, ``clients/python`` (package
:mod:`baton_client`, installable without Django). This module re-exports it so that
``from brokers.client import Client`` keeps working."""

from baton_client.client import *  # noqa: F403
from baton_client.client import __all__, MAX_WAIT_S, error_from_response  # noqa: F401
