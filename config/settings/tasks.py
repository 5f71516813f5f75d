"""Celery. Embedded default: the filesystem transport under var/celery (no server);
CELERY_BROKER_URL switches to Redis for a worker fleet.

Every file the filesystem transport writes is under var/celery: its messages (``queue/``)
and its exchange tables (``control/``, which kombu otherwise puts in the working
directory). The folders are made here, so any process (web server, worker, beat, a
management command that starts a channel) finds them."""

from .env import VAR_DIR, env_float_default, env_str

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
_celery_dir = VAR_DIR / "celery"
CELERY_BROKER_TRANSPORT_OPTIONS = {}
if CELERY_BROKER_URL.startswith("filesystem"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_celery_dir / "queue"),
        "data_folder_out": str(_celery_dir / "queue"),
        "processed_folder": str(_celery_dir / "processed"),
        "control_folder": str(_celery_dir / "control"),
        "store_processed": False,
    }
    for _folder in ("queue", "processed", "control"):
        (_celery_dir / _folder).mkdir(parents=True, exist_ok=True)
#: The filesystem transport with atomic message writes (config/celery_transport.py).
if CELERY_BROKER_URL.startswith("filesystem"):
    CELERY_BROKER_TRANSPORT = "config.celery_transport:Transport"
CELERY_TASK_IGNORE_RESULT = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
#: Seconds between housekeeping runs (expired messages, timed-out transactions).
BATON_HOUSEKEEPING_INTERVAL_S = env_float_default("BATON_HOUSEKEEPING_INTERVAL_S", 1.0)
#: Seconds a channel agent's lease lasts unless renewed (each batch renews it); after an
#: agent dies, another takes the channel over once its lease has run out.
BATON_CHANNEL_LEASE_S = env_float_default("BATON_CHANNEL_LEASE_S", 30.0)
