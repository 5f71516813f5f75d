"""Definitions as code (docs/definitions.md): everything an administrator defines,
written down as one document (``baton-definitions/1``), compared with the platform (plan) and
applied to it (apply), through the same services REST uses."""
