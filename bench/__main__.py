"""``python -m bench COMMAND [options]``: a benchmark or the soak (``benchmark``,
``benchmark_stomp``, ``benchmark_workflows``, ``benchmark_pipelines``, ``soak``, ...), run
from the checkout as ``manage.py`` runs a command, with bench.settings. The processes a
benchmark starts for its own phases inherit the setting."""

import os
import sys


def main() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    from django.core.management import execute_from_command_line

    execute_from_command_line(["manage.py", *sys.argv[1:]])


if __name__ == "__main__":
    main()
