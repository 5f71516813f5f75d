"""Django core: apps, middleware, security, static files."""

import secrets

from django.core.exceptions import ImproperlyConfigured

from .env import BASE_DIR, VAR_DIR, env_bool, env_list, env_str  # noqa: F401  (BASE_DIR is a setting)

#: ``embedded`` (the default: one machine, ./platform/up) or ``production``
#: (config/settings/production.py).
BATON_ENV = env_str("BATON_ENV", "embedded").strip().lower()
if BATON_ENV not in ("embedded", "production"):
    raise ImproperlyConfigured(f"BATON_ENV must be embedded or production, not {BATON_ENV!r}.")


def _secret_key() -> str:
    """The key comes from BATON_SECRET_KEY; an embedded install without one gets a random key
    generated once and kept under var/, so there is never a shared default secret. In
    production the key is required."""
    key = env_str("BATON_SECRET_KEY", "")
    if key:
        return key
    if BATON_ENV == "production":
        raise ImproperlyConfigured(
            "Set BATON_SECRET_KEY (a random string of at least 50 characters) with BATON_ENV=production."
        )
    path = VAR_DIR / "secret_key"
    if path.exists():
        return path.read_text().strip()
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    path.write_text(key)
    path.chmod(0o600)
    return key


SECRET_KEY = _secret_key()

#: The garbage collector's thresholds in the web server and the Celery worker (config/collector.py):
#: three whole numbers as ``gc.set_threshold`` takes them, or empty for Python's (700,10,10).
BATON_GC_THRESHOLD = env_str("BATON_GC_THRESHOLD", "20000,50,100")
if BATON_GC_THRESHOLD.strip():
    from config.collector import threshold_parsed

    try:
        threshold_parsed(BATON_GC_THRESHOLD)
    except ValueError as exc:
        raise ImproperlyConfigured(str(exc)) from None
DEBUG = env_bool("BATON_DEBUG", False)
ALLOWED_HOSTS = env_list("BATON_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("BATON_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "transactions",
    "brokers",
    "pubsub",
    "workflows",
    "topology",  # definitions as code: export, plan, apply
    "dashboard",
    "ingest",
    "analytics",
    "stomp_server",
    "axes",  # sign-in throttling (config/settings/signin.py)
]

MIDDLEWARE = [
    "config.health.HealthMiddleware",  # first: /healthz and /readyz, before the host check and redirects
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.csp.ContentSecurityPolicyMiddleware",  # the console's pages: its own assets only
    "axes.middleware.AxesMiddleware",  # last: turns a locked-out sign-in into its 429 page
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # collectstatic fills it; WhiteNoise wants it to exist
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("BATON_LOG_LEVEL", "WARNING")},
}
