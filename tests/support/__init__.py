"""The test harness: live platforms and their processes (``live``), the scratch environment
of a command run on a database of its own (``scratch``), throwaway Redis and PostgreSQL
servers (``redisserver``, ``pgserver``), the crash test's and the soak's load (``workload``)
and its checker (``checker``), a waiter in a process of its own (``wakeup_waiter``). Product
tests and the benchmarks (``bench/``, run from the checkout) both use it; it imports nothing
from ``bench``."""
