"""What the dashboard changes, each through the brokers' own services or, for moves, with
the message store's own steps (``moves.py``)."""

from .messages import dashboard_put, message_remove, queue_purge
from .moves import move_job_resume, move_job_run, move_job_submit

__all__ = ["dashboard_put", "message_remove", "move_job_resume", "move_job_run", "move_job_submit", "queue_purge"]
