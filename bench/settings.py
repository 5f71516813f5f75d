"""The settings the benchmarks and the soak run with, from the checkout: the platform's
(``config.settings``) and the ``bench`` app for its management commands. The product's
settings do not install it and the wheel does not hold it. Run a benchmark with
``python -m bench COMMAND ...`` (bench/__main__.py), or
``DJANGO_SETTINGS_MODULE=bench.settings python manage.py COMMAND ...``."""

from config.settings import *  # noqa: F401,F403
from config.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench"]
