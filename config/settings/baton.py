"""Platform defaults for brokers and queues (each broker and queue can override them)."""

from .env import env_int

#: Largest message body, in bytes, any queue accepts.
BATON_MAX_MESSAGE_LENGTH = env_int("BATON_MAX_MESSAGE_LENGTH", 4 * 1024 * 1024)
#: Largest number of messages one put or get call handles.
BATON_MAX_BATCH = env_int("BATON_MAX_BATCH", 1000)
#: Longest wait, in seconds, a get, commit or check may ask for.
BATON_MAX_WAIT_S = env_int("BATON_MAX_WAIT_S", 60)
#: How long an exclusive consumer's claim on a queue lasts after its last get.
BATON_EXCLUSIVE_LEASE_MS = env_int("BATON_EXCLUSIVE_LEASE_MS", 30_000)
#: A unit of work active for longer than this is rolled back, unless its broker says otherwise.
BATON_TRANSACTION_TIMEOUT_MS = env_int("BATON_TRANSACTION_TIMEOUT_MS", 120_000)
