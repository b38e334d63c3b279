"""Measures the web page against a running stack (a benchmark, not a test):

  (a) the bundle a page load fetches (the script and style sheet the page's
      HTML names), gzip-compressed as the gateway sends them;
  (b) the first load of the lobby: from navigation start to the first seek
      row on screen, signed in, each load in a fresh browser context (cold
      cache); the median of --loads;
  (c) a move's way from one board to the other: the mover drops a piece on
      the board, and the time until the opponent's board shows it (its
      `data-ply` changes), p50 and p90 over --moves moves. Both players are
      contexts of one Chromium; each page stamps its event with
      performance.timeOrigin + performance.now() (the wall clock, to a
      fraction of a millisecond), the mover's at the pointer-up of the drop,
      the opponent's from a MutationObserver on the board.

Usage, with a stack running (scripts/stack, or chess-stack):

    CHESS_WEB_URL=http://127.0.0.1:50051 .venv/bin/python3 tests/web/bench.py

The players and games it makes are ordinary accounts on that stack. Needs
the packages of tests/python/requirements.txt (grpcio-tools, Playwright).
"""

import argparse
import gzip
import importlib.resources
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid

from browser import BASE_URL, PASSWORD, browser
from playwright.sync_api import TimeoutError as PlaywrightTimeout

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "..", "..", "proto")


def public_api():
    """Stubs of the public API, generated from proto/ like tests/python does."""
    from grpc_tools import protoc

    out = tempfile.mkdtemp(prefix="chess-bench-stubs-")
    well_known = str(importlib.resources.files("grpc_tools") / "_proto")
    files = ["chess/common/v1/common.proto", "chess/gateway/v1/gateway.proto"]
    if protoc.main(["protoc", f"-I{PROTO}", f"-I{well_known}", f"--python_out={out}", f"--grpc_python_out={out}"] + files):
        sys.exit("protoc could not generate the stubs of the public API")
    for package in ["chess", "chess/common", "chess/common/v1", "chess/gateway", "chess/gateway/v1"]:
        open(os.path.join(out, package, "__init__.py"), "a").close()
    sys.path.insert(0, out)
    import grpc
    from chess.common.v1 import common_pb2
    from chess.gateway.v1 import gateway_pb2, gateway_pb2_grpc

    channel = grpc.insecure_channel(urllib.parse.urlsplit(BASE_URL).netloc)
    return common_pb2, gateway_pb2, gateway_pb2_grpc, channel


common, gw, gw_grpc, CHANNEL = None, None, None, None


class Account:
    """A player made through the public API, signed in."""

    def __init__(self):
        self.name = f"bench{uuid.uuid4().hex[:8]}"
        accounts = gw_grpc.AccountServiceStub(CHANNEL)
        accounts.Register(gw.RegisterRequest(username=self.name, email=f"{self.name}@example.com", password=PASSWORD))
        login = accounts.Login(gw.LoginRequest(login=self.name, password=PASSWORD))
        self.token = login.token
        self.metadata = [("authorization", f"Bearer {login.token}")]
        # What the page keeps in localStorage (web/src/api.ts).
        self.session = {
            "token": login.token,
            "playerId": login.player_id,
            "username": login.username,
            "expiresAt": login.expires_at.seconds * 1000,
        }

    def context(self, b):
        """A fresh browser context already signed in as this player."""
        state = {
            "cookies": [],
            "origins": [{"origin": BASE_URL, "localStorage": [{"name": "rookery.session", "value": json.dumps(self.session)}]}],
        }
        # The page's Content-Security-Policy forbids eval, which Playwright's
        # wait_for_function needs.
        return b.new_context(
            base_url=BASE_URL, storage_state=state, viewport={"width": 1200, "height": 900}, bypass_csp=True
        )


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


# --- (a) the bundle ----------------------------------------------------------------


def bundle_size():
    html = urllib.request.urlopen(f"{BASE_URL}/").read().decode()
    assets = re.findall(r'(?:src|href)="(/assets/[^"]+)"', html)
    if not assets:
        sys.exit("the page's HTML names no /assets/ files")
    total = {"raw": 0, "gzip": 0}
    print("(a) bundle a page load fetches:")
    for path in assets:
        sizes = {}
        for encoding in ["identity", "gzip"]:
            req = urllib.request.Request(f"{BASE_URL}{path}", headers={"Accept-Encoding": encoding})
            with urllib.request.urlopen(req) as r:
                body = r.read()
                sent = r.headers.get("Content-Encoding", "identity")
            if encoding == "gzip" and sent != "gzip":
                sys.exit(f"{path}: asked for gzip, got {sent}")
            if encoding == "gzip":
                assert len(gzip.decompress(body)) == sizes["raw"], f"{path}: the gzip body is not the file"
            sizes["raw" if encoding == "identity" else "gzip"] = len(body)
        for k in total:
            total[k] += sizes[k]
        dist = os.path.join(HERE, "..", "..", "web", "dist", path.lstrip("/") + ".gz")
        same = os.path.isfile(dist) and os.path.getsize(dist) == sizes["gzip"]
        note = "the .gz in web/dist" if same else "not the .gz in this checkout's web/dist"
        print(f"    {path}: {sizes['raw'] / 1024:.1f} KiB, gzip {sizes['gzip'] / 1024:.1f} KiB ({note})")
    print(f"    total: {total['raw'] / 1024:.1f} KiB, gzip {total['gzip'] / 1024:.1f} KiB")
    return total


# --- (b) first load of the lobby ---------------------------------------------------

LOBBY_READY = """
new MutationObserver((_, observer) => {
  if (document.querySelector('[data-testid=seek]')) {
    window.__lobbyReady = performance.now();
    observer.disconnect();
  }
}).observe(document, { childList: true, subtree: true });
"""


def lobby_load(b, loads):
    # Someone else's open seek, so that the lobby has a row to show.
    poster = Account()
    gw_grpc.LobbyServiceStub(CHANNEL).CreateSeek(
        gw.CreateSeekRequest(
            time_control=common.TimeControl(incremental=common.Incremental(initial_seconds=300, increment_seconds=3)),
            color=common.COLOR_CHOICE_EITHER,
            accept_mode=common.ACCEPT_MODE_MANUAL,
            show_name=True,
        ),
        metadata=poster.metadata,
    )
    viewer = Account()
    times = []
    for _ in range(loads):
        context = viewer.context(b)
        context.add_init_script(LOBBY_READY)
        page = context.new_page()
        page.goto("/", wait_until="commit")
        try:
            page.wait_for_function("window.__lobbyReady !== undefined", timeout=30_000)
        except PlaywrightTimeout:
            sys.exit("the lobby showed no seek row ([data-testid=seek]) within 30 s")
        times.append(page.evaluate("window.__lobbyReady"))
        context.close()
    print(f"(b) first load to a lobby with its seek list, {loads} cold loads in fresh contexts:")
    print(f"    median {statistics.median(times):.0f} ms (min {min(times):.0f}, max {max(times):.0f})")
    return times


# --- (c) a move from one board to the other ----------------------------------------

STAMPS = """
window.__pointerUp = [];
window.__plies = {};
document.addEventListener('pointerup', () => window.__pointerUp.push(performance.timeOrigin + performance.now()), true);
new MutationObserver(() => {
  const board = document.querySelector('[data-testid=board]');
  const ply = board && board.getAttribute('data-ply');
  if (ply !== null && ply !== undefined && !(ply in window.__plies)) {
    window.__plies[ply] = performance.timeOrigin + performance.now();
  }
}).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-ply'] });
"""


def ply_of(page):
    return int(page.get_attribute("[data-testid=board]", "data-ply"))


def square_center(page, square):
    """The page coordinates of `square` (e.g. "e2") on the page's board."""
    board = page.locator("[data-testid=board] cg-board")
    if board.count() == 0:
        board = page.locator("[data-testid=board]")
    box = board.first.bounding_box()
    flipped = page.get_attribute("[data-testid=board]", "data-orientation") == "black"
    file, rank = ord(square[0]) - ord("a"), int(square[1]) - 1
    col, row = (7 - file, rank) if flipped else (file, 7 - rank)
    size = box["width"] / 8
    return box["x"] + (col + 0.5) * size, box["y"] + (row + 0.5) * box["height"] / 8


def drop(page, uci):
    """Drags the piece of `uci`'s from-square onto its to-square."""
    x0, y0 = square_center(page, uci[:2])
    x1, y1 = square_center(page, uci[2:4])
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x1, y1, steps=4)
    page.mouse.up()


def new_game(white, black):
    lobby = gw_grpc.LobbyServiceStub(CHANNEL)
    challenge = lobby.CreateChallenge(
        gw.CreateChallengeRequest(
            opponent_username=black.name,
            time_control=common.TimeControl(untimed=common.Untimed()),
            color=common.COLOR_CHOICE_WHITE,
        ),
        metadata=white.metadata,
    ).challenge
    accepted = lobby.AcceptChallenge(gw.AcceptChallengeRequest(challenge_id=challenge.challenge_id), metadata=black.metadata)
    return accepted.challenge.game_id


def move_latency(b, moves):
    play = gw_grpc.PlayServiceStub(CHANNEL)
    white, black = Account(), Account()
    pages = {}
    for account in (white, black):
        context = account.context(b)
        context.add_init_script(STAMPS)
        pages[account.name] = context.new_page()
    rng = random.Random(15)
    latencies = []
    game_id = None
    while len(latencies) < moves:
        if game_id is None:
            game_id = new_game(white, black)
            for page in pages.values():
                page.goto(f"/games/{game_id}")
                page.wait_for_selector("[data-testid=board][data-ply]")
        state = play.GetGame(gw.GetGameRequest(game_id=game_id), metadata=white.metadata).game
        if state.status != common.GAME_STATUS_ACTIVE:
            game_id = None  # ended (mate, stalemate…): go on in a new game
            continue
        mover, watcher = (white, black) if state.ply % 2 == 0 else (black, white)
        legal = play.LegalMoves(gw.LegalMovesRequest(game_id=game_id), metadata=mover.metadata).moves
        # No promotions: they open a piece picker rather than land on a drop.
        choices = [m.uci for m in legal if len(m.uci) == 4]
        if not choices:
            game_id = None
            continue
        uci = rng.choice(choices)
        m, w = pages[mover.name], pages[watcher.name]
        target = state.ply + 1
        m.wait_for_function(f"+document.querySelector('[data-testid=board]').dataset.ply === {state.ply}")
        drop(m, uci)
        up = m.evaluate("window.__pointerUp[window.__pointerUp.length - 1]")
        try:
            w.wait_for_function(f"window.__plies['{target}'] !== undefined", timeout=15_000)
        except PlaywrightTimeout:
            sys.exit(f"{uci} dropped on {mover.name}'s board: {watcher.name}'s board never showed ply {target}")
        seen = w.evaluate(f"window.__plies['{target}']")
        m.wait_for_function(f"+document.querySelector('[data-testid=board]').dataset.ply >= {target}")
        latencies.append(seen - up)
    p50, p90 = percentile(latencies, 50), percentile(latencies, 90)
    print(f"(c) drop on the mover's board to the opponent's board showing it, {moves} moves:")
    print(f"    p50 {p50:.0f} ms, p90 {p90:.0f} ms (min {min(latencies):.0f}, max {max(latencies):.0f});")
    print("    timed in the two pages with performance.timeOrigin + performance.now() (wall clock):")
    print("    the mover's pointer-up against a MutationObserver on the opponent's data-ply")
    return latencies


def main():
    global common, gw, gw_grpc, CHANNEL
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=10, help="cold lobby loads (default 10)")
    parser.add_argument("--moves", type=int, default=50, help="moves timed (default 50)")
    args = parser.parse_args()
    if not BASE_URL:
        sys.exit("set CHESS_WEB_URL to the page's address, e.g. http://127.0.0.1:50051")
    common, gw, gw_grpc, CHANNEL = public_api()
    print(f"web page at {BASE_URL}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    bundle_size()
    with browser() as b:
        lobby_load(b, args.loads)
        move_latency(b, args.moves)


if __name__ == "__main__":
    main()
