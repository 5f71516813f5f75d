"""The channels' API: its operations defined once (``operations``: define, display, alter,
start, stop, …; ``receiving``: the receiving end of a channel from another platform, on
REST and on the session), the REST views that run them and their routes."""
