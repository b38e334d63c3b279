"""Nostr players for the tests: independent clients with their own keys.

A `Player` signs its events with nostr-sdk's `Keys`/`EventBuilder` and talks
to the relays through nostr-sdk's `Client`, subscribed to kinds 20301, 20302
and 20304 tagged `#p` with its public key. Every event that arrives is put in
a queue the test asserts on (`player.expect(...)`, `player.expect_nothing(...)`),
once per event id however many relays deliver it (`deliveries` counts them).

`RawSocket` is a bare websocket (the standard library only) for what a real
client refuses to do: send an event again byte for byte, or one whose
signature was tampered with, and see the relay's `OK` answer.

nostr-sdk is asynchronous; the tests are not. Every client runs on one event
loop in a background thread (`LOOP`), and the tests call into it with
`LOOP.run(coroutine)`.
"""

import asyncio
import base64
import datetime
import hashlib
import json
import os
import queue
import socket
import struct
import threading
import time
import urllib.parse

from nostr_sdk import (
    Client,
    EventBuilder,
    Filter,
    Keys,
    Kind,
    RelayUrl,
    ReqTarget,
    Tag,
    Timestamp,
)

KIND_REQUEST = 20300
KIND_REPLY = 20301
KIND_STATE = 20302
KIND_MOVE = 20303
KIND_ERROR = 20304
TIMEOUT = 20


class _Loop:
    """An asyncio event loop running forever in a daemon thread."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True, name="nostr-loop").start()

    def run(self, coroutine, timeout=TIMEOUT * 3):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)


LOOP = _Loop()


class Received:
    """An event a player received, as the NIP-01 JSON object."""

    def __init__(self, event):
        self.json = json.loads(event.as_json())
        self.kind = self.json["kind"]
        self.content = self.json["content"]
        self.tags = self.json["tags"]
        self.id = self.json["id"]

    def values(self, name):
        return [t[1] for t in self.tags if len(t) >= 2 and t[0] == name]

    def tag(self, name):
        """The first tag named `name`, whole."""
        for t in self.tags:
            if t and t[0] == name:
                return t
        return None

    def __repr__(self):
        return json.dumps(self.json)


class Player:
    """A Nostr client with its own keys, subscribed to what the server sends it."""

    def __init__(self, relays, name="player"):
        self.name = name
        self.relays = list(relays)
        self.keys = Keys.generate()
        self.pubkey = self.keys.public_key().to_hex()
        self.queue = queue.Queue()
        # Every event received so far, in order (also those `expect` skipped),
        # and how many times each id was delivered (by all relays together).
        self.history = []
        self.deliveries = {}
        self.eose = 0
        self._eose_cond = threading.Condition()
        LOOP.run(self._start())

    async def _start(self):
        self.client = Client()
        self._notifications = self.client.notifications()
        LOOP.loop.create_task(self._pump())
        for url in self.relays:
            await self.client.add_relay(RelayUrl.parse(url))
        await self.client.connect(datetime.timedelta(seconds=10))
        flt = (
            Filter()
            .kinds([Kind(KIND_REPLY), Kind(KIND_STATE), Kind(KIND_ERROR)])
            .pubkey(self.keys.public_key())
        )
        self.subscription = (await self.client.subscribe(ReqTarget.auto([flt]))).id

    async def _pump(self):
        while True:
            notification = await self._notifications.next()
            if notification is None or notification.is_shutdown():
                return
            if not notification.is_message():
                continue
            message = notification.message.as_enum()
            if message.is_EVENT_MSG():
                received = Received(message.event)
                # Each event once, however many relays deliver it (events
                # are identified by their id).
                self.deliveries[received.id] = self.deliveries.get(received.id, 0) + 1
                if self.deliveries[received.id] == 1:
                    self.history.append(received)
                    self.queue.put(received)
            elif message.is_END_OF_STORED_EVENTS():
                with self._eose_cond:
                    self.eose += 1
                    self._eose_cond.notify_all()

    def wait_subscribed(self, after=0, count=None, timeout=TIMEOUT * 3):
        """Waits until the relays acknowledged the subscription `count` more
        times (default: once per relay) than the `after` EOSE counted so far
        (a relay sends one per subscription, again after a reconnection)."""
        want = after + (count or len(self.relays))
        with self._eose_cond:
            if not self._eose_cond.wait_for(lambda: self.eose >= want, timeout):
                raise AssertionError(f"{self.name}: {self.eose} EOSE, not {want}, within {timeout} s")
        return self.eose

    # Sending.

    def sign(self, kind, content, tags, created_at=None):
        builder = EventBuilder(Kind(kind), content).tags([Tag.parse(t) for t in tags])
        if created_at is not None:
            builder = builder.custom_created_at(Timestamp.from_secs(created_at))
        return builder.finalize(self.keys)

    def publish(self, event):
        """Publishes a signed event to every relay; returns its JSON object."""
        output = LOOP.run(self.client.send_event(event))
        if not output.success:
            raise AssertionError(f"{self.name}: no relay took {event.as_json()[:1000]}: {output.failed}")
        return json.loads(event.as_json())

    def send(self, kind, content, tags):
        return self.publish(self.sign(kind, content, tags))

    def request_game(self, server):
        return self.send(KIND_REQUEST, "", [["p", server]])

    # Receiving.

    def expect(self, what="an event", match=lambda e: True, timeout=TIMEOUT):
        """The next received event for which `match` holds; the others before it
        are skipped."""
        deadline = time.monotonic() + timeout
        skipped = []
        while True:
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise queue.Empty
                event = self.queue.get(timeout=left)
            except queue.Empty:
                raise AssertionError(
                    f"{self.name} ({self.pubkey}) got no {what} within {timeout} s; "
                    f"skipped meanwhile: {skipped}"
                ) from None
            if match(event):
                return event
            skipped.append(event)

    def expect_kind(self, kind, what=None, match=lambda e: True, timeout=TIMEOUT):
        return self.expect(what or f"kind {kind}", lambda e: e.kind == kind and match(e), timeout)

    def expect_nothing(self, seconds, match=lambda e: True, what="event"):
        """Fails if an event for which `match` holds arrives within `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                event = self.queue.get(timeout=left)
            except queue.Empty:
                return
            if match(event):
                raise AssertionError(f"{self.name} got an unexpected {what}: {event}")

    def close(self):
        try:
            LOOP.run(self.client.shutdown(), timeout=10)
        except Exception:  # noqa: BLE001 - best effort
            pass


class RawSocket:
    """A bare websocket client (RFC 6455, text frames only) to a relay; as a
    context manager, closed at the end of the block."""

    def __init__(self, url, timeout=TIMEOUT):
        parts = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        path = parts.path or "/"
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the relay closed during the handshake")
            self.buffer += chunk
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status + b" ":
            raise ConnectionError(f"handshake refused: {head!r}")
        accept = base64.b64encode(
            hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()
        ).decode()
        if accept.encode() not in head:
            raise ConnectionError(f"bad Sec-WebSocket-Accept: {head!r}")

    def send(self, message):
        """Sends a JSON value as one masked text frame."""
        payload = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
        self.send_text(payload)

    def send_text(self, payload):
        header = bytes([0x81])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the relay closed the connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def recv(self, timeout=TIMEOUT):
        """The next text message, parsed as JSON (pings are answered)."""
        self.sock.settimeout(timeout)
        message = b""
        while True:
            b0, b1 = self._read(2)
            opcode = b0 & 0x0F
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            payload = self._read(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x9:  # ping
                self._control(0xA, payload)
                continue
            if opcode == 0x8:
                raise ConnectionError("the relay closed the websocket")
            if opcode in (0x1, 0x0, 0x2):
                message += payload
                if b0 & 0x80:
                    return json.loads(message.decode())

    def _control(self, opcode, payload):
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + masked)

    def publish(self, event, timeout=TIMEOUT):
        """Sends `["EVENT", event]` and returns the relay's `["OK", id, ok, message]`."""
        self.send(["EVENT", event])
        deadline = time.monotonic() + timeout
        while True:
            message = self.recv(max(0.1, deadline - time.monotonic()))
            if message[0] == "OK" and message[1] == event["id"]:
                return message

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self.close()
