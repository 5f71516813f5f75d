"""Domain operations on workflows: definitions, instances and their sagas. Every interface
(REST, the session, management commands, tests) calls these."""
