"""Django Channels (WebSocket pushes to the dashboard). Embedded default: an in-process
channel layer; BATON_REDIS_URL switches to Redis for several web processes."""

from .env import env_str

_redis = env_str("BATON_REDIS_URL", "")
CHANNEL_LAYERS = (
    {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [_redis]}}}
    if _redis
    else {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
)
