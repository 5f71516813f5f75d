"""Channels between brokers (docs/design.md §6, docs/channels.md): their definitions, the sender
agent and its Celery tasks, the receiver, the transports between them, and their API.

A subpackage, never an app or a top-level module: a top-level ``channels`` would shadow
Django Channels."""
