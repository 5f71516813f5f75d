"""STOMP over WebSocket at /stomp/: the subprotocol echoed, frames split across messages
or several to one, binary bodies in binary messages."""

from __future__ import annotations

from websockets.sync.client import connect

from stomp_server.frames import Frame, FrameParser, frame_encode


def test_stomp_over_websocket(web_port, stomp_broker, token):
    url = f"ws://127.0.0.1:{web_port}/stomp/"
    with connect(url, subprotocols=["v10.stomp", "v11.stomp", "v12.stomp"], open_timeout=20) as ws:
        assert ws.subprotocol == "v12.stomp"
        parser = FrameParser(max_frame=1 << 24, version="1.2")

        def next_frame() -> Frame:
            while not (frames := parser.feed(b"")):
                data = ws.recv(timeout=20)
                frames = parser.feed(data if isinstance(data, bytes) else data.encode())
                if frames:
                    break
            return frames[0]

        connect_frame = frame_encode(
            Frame(
                "CONNECT",
                [
                    ("accept-version", "1.1,1.2"),
                    ("host", "QM1"),
                    ("login", "tester"),
                    ("passcode", token),
                    ("heart-beat", "0,0"),
                ],
            ),
            version="1.2",
        )
        ws.send(connect_frame[:10])  # split across messages
        ws.send(connect_frame[10:])
        assert next_frame().get("version") == "1.2"
        body = b"\0\xff binary"
        ws.send(
            frame_encode(Frame("SEND", [("destination", "/queue/Q1")], body), version="1.2")
            + frame_encode(Frame("SUBSCRIBE", [("id", "s"), ("destination", "/queue/Q1")]), version="1.2")
        )
        message = next_frame()
        assert (message.command, message.body, message.get("subscription")) == ("MESSAGE", body, "s")
        ws.send(frame_encode(Frame("DISCONNECT", [("receipt", "bye")]), version="1.2"))
        assert next_frame().get("receipt-id") == "bye"
    with connect(url, subprotocols=["v10.stomp"], open_timeout=20) as ws:
        assert ws.subprotocol == "v10.stomp"
