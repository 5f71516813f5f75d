"""``python -m bench.bare_uvicorn <uvicorn's arguments>``: Uvicorn, on a CPU of its own as
Baton's web server runs (config/cpu_pin.py, ``BATON_WEB_CPU``), so that the bare servers
the floors measure have what Baton's has."""

import os

from uvicorn.main import main

from config.cpu_pin import web_cpu_pinned

if __name__ == "__main__":
    web_cpu_pinned(os.environ.get("BATON_WEB_CPU", "auto"))
    main()
