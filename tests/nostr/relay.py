"""A Nostr relay for the tests, in its own process.

    python3 relay.py [--port N] [--no-verify]

Listens on 127.0.0.1:N (N = 0 or none: a free port), prints its URL
(`ws://127.0.0.1:N`) on one line once it accepts connections, and runs until
it is killed (or SIGTERM/SIGINT), or the process that started it is gone. Killing it and starting it again on the
same port is how the tests restart a relay; nothing is kept between runs
(the chess events are ephemeral: relays never store them anyway).

By default the relay is nostr-sdk's in-memory `LocalRelay`, with its rate
limit raised far above the default (60 events a minute per connection) so
that a test's players and the server are never throttled. `LocalRelay`
checks every event's id and signature and refuses the bad ones itself.

`--no-verify` runs instead a small relay written here (NIP-01 `EVENT`, `REQ`,
`CLOSE`; filters on ids, authors, kinds, `#<letter>` tags, since and until;
nothing stored, so `EOSE` at once) that forwards every event as it comes,
without checking its id or signature: a careless relay, to show that the
server checks events itself. It can also play a rate-limited relay: each
SIGUSR1 makes it refuse the next three events of the server's kinds
(20301, 20302, 20304) with `["OK", <id>, false, "rate-limited: …"]`, and
forward nothing of them; it prints `refused <id> <kind> <game or ->` on its
standard output for each one, so a test can tell the server sent the same event again.
"""

import argparse
import asyncio
import base64
import hashlib
import json
import os
import signal
import socket
import struct
import sys
import time

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
# The kinds the chess server publishes: what a SIGUSR1 has refused.
SERVER_KINDS = (20301, 20302, 20304)
# Events refused after each SIGUSR1.
REFUSALS_PER_SIGNAL = 3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def listening(port, timeout=10):
    """Returns once 127.0.0.1:port accepts connections."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


# --- nostr-sdk's LocalRelay ---------------------------------------------------


async def run_local_relay(port):
    """Starts a LocalRelay on `port`; returns a function that stops it."""
    from nostr_sdk import LocalRelayBuilder, RateLimit

    relay = (
        LocalRelayBuilder()
        .addr("127.0.0.1")
        .port(port)
        .rate_limit(RateLimit(max_reqs=10_000, notes_per_minute=1_000_000))
        .build()
    )
    # `run` binds and returns, serving on nostr-sdk's own runtime.
    await relay.run()
    return relay.shutdown


# --- A relay that verifies nothing ------------------------------------------


def matches(flt, event):
    """Whether `event` matches the NIP-01 filter `flt`."""
    if "ids" in flt and event.get("id") not in flt["ids"]:
        return False
    if "authors" in flt and event.get("pubkey") not in flt["authors"]:
        return False
    if "kinds" in flt and event.get("kind") not in flt["kinds"]:
        return False
    if "since" in flt and event.get("created_at", 0) < flt["since"]:
        return False
    if "until" in flt and event.get("created_at", 0) > flt["until"]:
        return False
    for key, wanted in flt.items():
        if len(key) == 2 and key[0] == "#":
            values = {t[1] for t in event.get("tags", []) if len(t) >= 2 and t[0] == key[1]}
            if not values.intersection(wanted):
                return False
    return True


class Connection:
    """One websocket client of the open relay."""

    def __init__(self, relay, reader, writer):
        self.relay = relay
        self.reader = reader
        self.writer = writer
        self.subscriptions = {}

    async def handshake(self):
        head = await self.reader.readuntil(b"\r\n\r\n")
        key = None
        for line in head.decode("latin-1").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "sec-websocket-key":
                key = value.strip()
        if key is None:
            self.writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            await self.writer.drain()
            return False
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.writer.write(
            (
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
            ).encode()
        )
        await self.writer.drain()
        return True

    def frame(self, opcode, payload):
        n = len(payload)
        if n < 126:
            header = struct.pack(">BB", 0x80 | opcode, n)
        elif n < 1 << 16:
            header = struct.pack(">BBH", 0x80 | opcode, 126, n)
        else:
            header = struct.pack(">BBQ", 0x80 | opcode, 127, n)
        self.writer.write(header + payload)

    def send(self, message):
        self.frame(0x1, json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode())

    async def read_message(self):
        """The next text message, or None once the connection closes."""
        message = b""
        while True:
            b0, b1 = await self.reader.readexactly(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack(">H", await self.reader.readexactly(2))
            elif n == 127:
                (n,) = struct.unpack(">Q", await self.reader.readexactly(8))
            mask = await self.reader.readexactly(4) if b1 & 0x80 else b"\0\0\0\0"
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(await self.reader.readexactly(n)))
            if opcode == 0x8:
                self.frame(0x8, payload[:2])
                return None
            if opcode == 0x9:
                self.frame(0xA, payload)
                continue
            if opcode == 0xA:
                continue
            message += payload
            if b0 & 0x80:
                return message.decode()

    async def serve(self):
        try:
            if not await self.handshake():
                return
            self.relay.connections.add(self)
            while True:
                text = await self.read_message()
                if text is None:
                    return
                self.handle(text)
                await self.writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            return
        finally:
            self.relay.connections.discard(self)
            self.writer.close()

    def handle(self, text):
        try:
            message = json.loads(text)
            verb = message[0]
        except (ValueError, IndexError, KeyError, TypeError):
            self.send(["NOTICE", "invalid: not a relay message"])
            return
        if verb == "EVENT" and len(message) >= 2 and isinstance(message[1], dict):
            event = message[1]
            if self.relay.refuse > 0 and event.get("kind") in SERVER_KINDS:
                self.relay.refuse -= 1
                self.send(["OK", str(event.get("id", "")), False, "rate-limited: slow down"])
                games = [t[1] for t in event.get("tags", []) if len(t) >= 2 and t[0] == "d"]
                print(f"refused {event.get('id')} {event.get('kind')} {','.join(games) or '-'}", flush=True)
                return
            self.send(["OK", str(event.get("id", "")), True, ""])
            self.relay.broadcast(event)
        elif verb == "REQ" and len(message) >= 2:
            self.subscriptions[str(message[1])] = [f for f in message[2:] if isinstance(f, dict)]
            self.send(["EOSE", str(message[1])])
        elif verb == "CLOSE" and len(message) >= 2:
            self.subscriptions.pop(str(message[1]), None)
        else:
            self.send(["NOTICE", f"unsupported: {verb}"])

    def deliver(self, event):
        for sid, filters in self.subscriptions.items():
            if any(matches(f, event) for f in filters):
                self.send(["EVENT", sid, event])


class OpenRelay:
    """Forwards every event to the matching subscriptions, unverified."""

    def __init__(self):
        self.connections = set()
        # Events of the server's kinds still to refuse (SIGUSR1 adds some).
        self.refuse = 0

    def broadcast(self, event):
        for connection in list(self.connections):
            try:
                connection.deliver(event)
            except (ConnectionError, RuntimeError):
                pass

    async def run(self, port):
        server = await asyncio.start_server(
            lambda r, w: Connection(self, r, w).serve(), "127.0.0.1", port, reuse_address=True, limit=1 << 20
        )
        return server.close


# --- main -----------------------------------------------------------------------


async def exit_with_parent(stop):
    """Stops the relay once the process that started it is gone, so that
    nothing outlives a test that was killed."""
    parent = os.getppid()
    while os.getppid() == parent:
        await asyncio.sleep(0.5)
    stop.set()


async def bound(start, port, timeout=30):
    """`start()`, again while the port is still in use: a relay started again
    right after being killed may find its port held for a moment (by the
    dead one's connections, or by a client's outgoing connection)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await start()
        except Exception as error:
            if "in use" not in str(error) or time.monotonic() > deadline:
                raise
            print(f"port {port} is in use; trying again", file=sys.stderr, flush=True)
            await asyncio.sleep(0.5)


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-verify", action="store_true", help="forward events without checking them")
    args = parser.parse_args()
    port = args.port or free_port()

    loop = asyncio.get_running_loop()
    if args.no_verify:
        relay = OpenRelay()
        stop_relay = await bound(lambda: relay.run(port), port)

        def refuse_more():
            relay.refuse += REFUSALS_PER_SIGNAL

        loop.add_signal_handler(signal.SIGUSR1, refuse_more)
    else:
        stop_relay = await bound(lambda: run_local_relay(port), port)
    await listening(port)
    print(f"ws://127.0.0.1:{port}", flush=True)

    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    watch = asyncio.create_task(exit_with_parent(stop))
    await stop.wait()
    watch.cancel()
    stop_relay()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
