"""Django's admin (``/admin/``): served only with ``BATON_ADMIN=1`` (default off, in
production too), and then read-only for the engine's tables (``config/readonly_admin.py``).
The console (the dashboard) is where users, grants and definitions are managed."""

from .env import env_bool

BATON_ADMIN = env_bool("BATON_ADMIN", False)
