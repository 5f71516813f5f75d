"""Benchmarks and the soak, run from the checkout, not part of the installed product:
``python -m bench COMMAND`` (bench/__main__.py, with bench/settings.py), or
``python -m bench.<tool>`` for the standalone tools. docs/performance.md says what each
measures.

The throughput benchmark of the put and get paths (``python -m bench benchmark``):

Measures messages per second for put+commit and get+commit of 1 KiB persistent messages,
one message per unit of work and 100 per unit of work:

* in-process: the services called directly (:mod:`.inprocess`);
* REST: HTTP clients (:mod:`.rest`) against a real Uvicorn server started on a free
  loopback port with the same command line as ``platform/up``;
* session: the same units of work through the Python client over WebSocket sessions;
* the queue scenarios (:mod:`.flows`): producers and consumers at once, in process, over
  REST and over sessions, and on the peers: a plain PostgreSQL table queue and RabbitMQ
  (:mod:`.rabbitmq`).

Everything runs on a scratch database (:mod:`tests.support.scratch`): a fresh SQLite file in a
temporary directory unless a database URL is given. The parts that need Django on that
database run in child processes (the command re-executed with ``--phase``) whose
environment points ``DATABASE_URL`` and ``BATON_VAR_DIR`` there, so the calling process
never touches the platform's own database. Nothing here asserts anything about timings.
"""
