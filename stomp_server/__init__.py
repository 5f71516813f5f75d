"""STOMP 1.0, 1.1 and 1.2 on TCP and WebSocket (docs/api.md, "STOMP"; docs/stomp.md)."""
