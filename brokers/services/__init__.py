"""Domain operations on brokers, queues, messages and connections. Every interface (REST
views, management commands, Celery tasks, tests) calls these; none writes models itself."""
