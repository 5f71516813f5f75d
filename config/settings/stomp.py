"""STOMP (API.md, "STOMP"; docs/stomp.md): where it listens and its bounds."""

from .database import DATABASES
from .env import env_bool, env_float_default, env_int, env_str

#: The TCP port of the STOMP server ./platform/up starts at BATON_HOST; 0 turns it off.
BATON_STOMP_PORT = env_int("BATON_STOMP_PORT", 61613)
#: The broker of a CONNECT without a host (or host "/"); unset: the one broker the user may use.
BATON_STOMP_DEFAULT_BROKER = env_str("BATON_STOMP_DEFAULT_BROKER", "")
#: The largest frame (head and body) accepted; larger ones get ERROR and the connection closes.
BATON_STOMP_MAX_FRAME = env_int("BATON_STOMP_MAX_FRAME", 16 * 1024 * 1024)
#: The heart-beat interval the server offers both ways (milliseconds; 0: none).
BATON_STOMP_HEARTBEAT_MS = env_int("BATON_STOMP_HEARTBEAT_MS", 10_000)
#: Bytes of frames a client may leave unread before its connection is closed.
BATON_STOMP_SEND_BUFFER = env_int("BATON_STOMP_SEND_BUFFER", 32 * 1024 * 1024)
#: Seconds a frame may take to be written before the connection is closed.
BATON_STOMP_SEND_TIMEOUT_S = env_float_default("BATON_STOMP_SEND_TIMEOUT_S", 30.0)
#: Frames received on one connection and not yet applied; more stop the reading of its socket.
BATON_STOMP_MAX_PENDING = env_int("BATON_STOMP_MAX_PENDING", 1000)
#: Keep the StompClient rows the dashboard shows current (a thread per process, every 2 s).
BATON_STOMP_REGISTRY = env_bool("BATON_STOMP_REGISTRY", True)
#: Seconds a connection may take to complete CONNECT; then it gets ERROR and is closed.
BATON_STOMP_CONNECT_TIMEOUT_S = env_float_default("BATON_STOMP_CONNECT_TIMEOUT_S", 10.0)
#: Connections this process serves at once (signed in or not); more get ERROR and are closed.
BATON_STOMP_MAX_CONNECTIONS = env_int("BATON_STOMP_MAX_CONNECTIONS", 2000)
#: Signed-in connections of one user at once, over every STOMP server (the others' counted
#: from their registry rows, which lag by up to 2 s); more get ERROR at CONNECT.
BATON_STOMP_MAX_CONNECTIONS_PER_USER = env_int("BATON_STOMP_MAX_CONNECTIONS_PER_USER", 100)
#: Subscriptions one connection may hold; a SUBSCRIBE beyond gets ERROR.
BATON_STOMP_MAX_SUBSCRIPTIONS = env_int("BATON_STOMP_MAX_SUBSCRIPTIONS", 1000)
#: Durable topic subscriptions (each a queue) one user may hold on a broker unless they
#: administer it; a SUBSCRIBE that would make one more gets ERROR.
BATON_STOMP_MAX_DURABLE_PER_USER = env_int("BATON_STOMP_MAX_DURABLE_PER_USER", 20)
#: Threads that apply the frames and make the gets of all STOMP connections of a process
#: (a connection or a subscription holds none while it waits). On SQLite one by default: a
#: frame's commit does not wait for its sync on the thread, and one writer at a time is all
#: SQLite takes, so more threads only contend for the interpreter's lock; a thread in a long
#: wait (a password's hash) lets another take over meanwhile. On PostgreSQL 16: its
#: statements wait on the network (docs/stomp.md, "How it is served").
BATON_STOMP_THREADS = env_int("BATON_STOMP_THREADS", 1 if DATABASES["default"]["ENGINE"].endswith("sqlite3") else 16)
