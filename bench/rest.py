"""The REST and session scenarios: clients (threads, each with its own keep-alive
``httpx.Client``, or its own session through the Python client) against a running server.
Needs no Django (and touches no database)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable

import httpx

from .report import (
    BATCHES,
    REST_CLIENTS,
    WARMUP_QUEUE,
    BenchmarkError,
    Result,
    body_text,
    scenario_messages,
    queue_name,
)

REQUEST_TIMEOUT_S = 120.0


class Api:
    """The four calls a unit of work makes, over one keep-alive connection."""

    def __init__(self, base_url: str, token: str) -> None:
        self.http = httpx.Client(
            base_url=base_url,
            headers={"Authorization": f"Token {token}"},
            timeout=REQUEST_TIMEOUT_S,
        )

    def close(self) -> None:
        self.http.close()

    def _call(self, method: str, path: str, json: dict | None = None) -> dict:
        response = self.http.request(method, path, json=json)
        if response.status_code >= 300:
            raise BenchmarkError(f"{method} {path} answered {response.status_code}: {response.text[:500]}")
        return response.json()

    def ping(self, broker: str) -> None:
        self._call("GET", f"/api/brokers/{broker}/" if broker else "/api/brokers/")

    def begin(self, broker: str) -> str:
        return self._call("POST", f"/api/brokers/{broker}/transactions/", {})["id"]

    def put(self, broker: str, queue: str, transaction: str, body: str, batch: int) -> None:
        message = {"body": body, "persistence": "persistent"}
        data = (
            {**message, "transaction": transaction}
            if batch == 1
            else {
                "messages": [message] * batch,
                "transaction": transaction,
            }
        )
        self._call("POST", f"/api/brokers/{broker}/queues/{queue}/messages/", data)

    def get(self, broker: str, queue: str, transaction: str, batch: int) -> int:
        data = self._call(
            "POST", f"/api/brokers/{broker}/queues/{queue}/get/", {"transaction": transaction, "batch": batch}
        )
        return len(data["messages"])

    def commit(self, transaction: str) -> None:
        state = self._call("POST", f"/api/transactions/{transaction}/commit/", {})["state"]
        if state != "committed":
            raise BenchmarkError(f"Transaction {transaction} is {state} after its commit.")


class SessionApi:
    """The same calls through the Python client's session: the put under the unit of work is
    pipelined (the commit reads its reply first), as an application's would be."""

    def __init__(self, base_url: str, token: str) -> None:
        from baton_client import Client

        self.client = Client(base_url, token, timeout=REQUEST_TIMEOUT_S, transport="session")

    def close(self) -> None:
        self.client.close()

    def ping(self, broker: str) -> None:
        self.client.display_broker(broker)
        self.client.transaction(broker).rollback()  # opens the session

    def begin(self, broker: str):
        return self.client.transaction(broker)

    def put(self, broker: str, queue: str, transaction, body: str, batch: int) -> None:
        if batch == 1:
            transaction.put(queue, body, persistence="persistent")
        else:
            transaction.put(queue, messages=[body] * batch, persistence="persistent")

    def get(self, broker: str, queue: str, transaction, batch: int) -> int:
        return len(transaction.get(queue, batch=batch))

    def commit(self, transaction) -> None:
        state = transaction.commit().state
        if state != "committed":
            raise BenchmarkError(f"Transaction {transaction.id} is {state} after its commit.")


def server_ready(base_url: str, token: str, broker: str, *, alive: Callable[[], bool], timeout_s: float = 60) -> None:
    """Wait until the server answers an authenticated request."""
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        if not alive():
            raise BenchmarkError("The server exited while starting.")
        api = Api(base_url, token)
        try:
            api.ping(broker)
            return
        except (httpx.HTTPError, BenchmarkError) as exc:
            last = exc
        finally:
            api.close()
        time.sleep(0.1)
    raise BenchmarkError(f"The server did not answer within {timeout_s:g} s: {last}")


def _scenario(
    *,
    base_url: str,
    token: str,
    broker: str,
    clients: int,
    units_each: int,
    unit: Callable[[Api], int],
    stop: threading.Event,
    api_class: type = Api,
) -> tuple[int, float]:
    """Run ``unit`` ``units_each`` times in each of ``clients`` threads, all starting
    together; return the messages moved and the wall-clock seconds."""
    start_line = threading.Barrier(clients + 1)
    moved = [0] * clients
    errors: list[BaseException] = []

    def client(index: int) -> None:
        api = api_class(base_url, token)
        try:
            api.ping(broker)  # open the keep-alive connection before the clock starts
            start_line.wait()
            for _ in range(units_each):
                if stop.is_set():
                    return
                moved[index] += unit(api)
        except threading.BrokenBarrierError:
            pass
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
            stop.set()
            start_line.abort()
        finally:
            api.close()

    threads = [
        threading.Thread(target=client, args=(i,), name=f"bench-client-{i}", daemon=True) for i in range(clients)
    ]
    try:
        for thread in threads:
            thread.start()
        try:
            start_line.wait()
        except threading.BrokenBarrierError:
            pass
        start = time.perf_counter()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
        seconds = time.perf_counter() - start
    except BaseException:  # Ctrl-C: let the clients finish their current request and go
        stop.set()
        start_line.abort()
        raise
    if errors:
        raise errors[0]
    if stop.is_set():
        raise BenchmarkError("Stopped.")
    return sum(moved), seconds


def run_rest(
    *, base_url: str, token: str, broker: str, messages: int, progress: bool = False, transport: str = "rest"
) -> list[Result]:
    """For 1 and 8 clients and each batch size: put+commit, then get+commit, ``messages``
    messages (rounded up so each client does whole units of work) over the REST API, or
    over sessions (``transport="session"``)."""
    body = body_text()
    stop = threading.Event()
    api_class, label = (Api, "REST") if transport == "rest" else (SessionApi, "session")

    # Warm up the server: imports, URL resolution, its first database connections.
    api = api_class(base_url, token)
    try:
        for _ in range(3):
            txn = api.begin(broker)
            api.put(broker, WARMUP_QUEUE, txn, body, 2)
            api.commit(txn)
            txn = api.begin(broker)
            api.get(broker, WARMUP_QUEUE, txn, 2)
            api.commit(txn)
    finally:
        api.close()

    results = []
    for clients in REST_CLIENTS:
        for batch in BATCHES:
            queue = queue_name(transport, clients, batch)
            total = scenario_messages(messages, batch=batch, clients=clients)
            units_each = total // batch // clients

            def put_unit(api: Api, queue: str = queue, batch: int = batch) -> int:
                txn = api.begin(broker)
                api.put(broker, queue, txn, body, batch)
                api.commit(txn)
                return batch

            def get_unit(api: Api, queue: str = queue, batch: int = batch) -> int:
                txn = api.begin(broker)
                got = api.get(broker, queue, txn, batch)
                api.commit(txn)
                return got

            for operation, unit in (("put+commit", put_unit), ("get+commit", get_unit)):
                if progress:
                    print(
                        f"  {label} {operation}, {clients} client(s), batch {batch}: {total} messages",
                        file=sys.stderr,
                        flush=True,
                    )
                moved, seconds = _scenario(
                    base_url=base_url,
                    token=token,
                    broker=broker,
                    clients=clients,
                    units_each=units_each,
                    unit=unit,
                    stop=stop,
                    api_class=api_class,
                )
                if moved != total:
                    raise BenchmarkError(
                        f"{label} {operation}, {clients} client(s), batch {batch}: moved {moved} of {total} messages."
                    )
                results.append(Result(label, operation, clients, batch, moved, seconds))
    return results
