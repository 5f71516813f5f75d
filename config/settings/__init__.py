"""Settings, one module per concern. Every value a deployment changes comes from the environment."""

from .base import *  # noqa: F401,F403
from .database import *  # noqa: F401,F403
from .api import *  # noqa: F401,F403
from .tasks import *  # noqa: F401,F403
from .realtime import *  # noqa: F401,F403
from .baton import *  # noqa: F401,F403
from .dashboard import *  # noqa: F401,F403
from .session import *  # noqa: F401,F403
from .stomp import *  # noqa: F401,F403
from .wakeups import *  # noqa: F401,F403
from .spark import *  # noqa: F401,F403
from .signin import *  # noqa: F401,F403
from .admin import *  # noqa: F401,F403
from .operating import *  # noqa: F401,F403
from .production import *  # noqa: F401,F403  (last: it overrides)
