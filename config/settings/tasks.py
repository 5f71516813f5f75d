"""Celery. Embedded default: the filesystem transport under var/celery (no server);
CELERY_BROKER_URL switches to Redis for a worker fleet."""
from .env import VAR_DIR, env_float_default, env_str

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
_celery_dir = VAR_DIR / "celery"
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(_celery_dir / "queue"),
        "data_folder_out": str(_celery_dir / "queue"),
        "processed_folder": str(_celery_dir / "processed"),
        "store_processed": False,
    }
    if CELERY_BROKER_URL.startswith("filesystem")
    else {}
)
#: The filesystem transport with atomic message writes (config/celery_transport.py).
if CELERY_BROKER_URL.startswith("filesystem"):
    CELERY_BROKER_TRANSPORT = "config.celery_transport:Transport"
CELERY_TASK_IGNORE_RESULT = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
#: Seconds between housekeeping runs (expired messages, timed-out transactions).
BATON_HOUSEKEEPING_INTERVAL_S = env_float_default("BATON_HOUSEKEEPING_INTERVAL_S", 1.0)
