"""What the web page's browser tests share: Chromium driven by Playwright,
a fresh browser context per player, screenshots, and the page's own forms.

Each scenario is a file beside this one, run as a script against a running
stack; `tests/tests/web.rs` starts the stack and runs them. Environment:

    CHESS_WEB_URL        the page, e.g. http://127.0.0.1:50051 (required)
    CHESS_WEB_OUT        folder for screenshots (default: a new temporary one)
    CHESS_TEST_CHROMIUM  the browser (default: /usr/bin/chromium, Debian's)

Playwright's own browser downloads are never used: `scripts/setup test`
installs Debian's chromium, and Playwright for Python into .venv/.
"""

import contextlib
import os
import re
import sys
import tempfile
import uuid

from playwright.sync_api import Page, expect, sync_playwright

BASE_URL = os.environ.get("CHESS_WEB_URL", "").rstrip("/")
OUT = os.environ.get("CHESS_WEB_OUT") or tempfile.mkdtemp(prefix="chess-web-")
CHROMIUM = os.environ.get("CHESS_TEST_CHROMIUM") or "/usr/bin/chromium"
PASSWORD = "correct horse battery"
TIMEOUT_MS = 15_000

expect.set_options(timeout=TIMEOUT_MS)
_screenshots: list[str] = []
_players: list["Player"] = []


def chromium_path() -> str:
    """The browser to run, or exits saying how to install it."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        sys.exit(
            f"no Chromium at {CHROMIUM}: install Debian's with `sudo apt-get install chromium` "
            "(scripts/setup test does), or point CHESS_TEST_CHROMIUM at another build"
        )
    return CHROMIUM


@contextlib.contextmanager
def browser():
    """Headless Chromium for one scenario; lists the screenshots at the end,
    and on a failure first takes one of every player's page."""
    if not BASE_URL:
        sys.exit("CHESS_WEB_URL is not set (the page's address, e.g. http://127.0.0.1:50051)")
    os.makedirs(OUT, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=chromium_path(),
            headless=True,
            args=["--no-sandbox", "--disable-gpu"],
        )
        try:
            yield b
        except BaseException:
            # What each player saw when the scenario failed.
            for player in _players:
                with contextlib.suppress(Exception):
                    player.screenshot(f"failed-{player.name}")
            raise
        finally:
            b.close()
            if _screenshots:
                print("screenshots:")
                for path in _screenshots:
                    print(f"  {path}")


class Player:
    """One person at the page: a browser context of their own (own storage,
    so own session) and its page, with every console error and uncaught
    exception recorded."""

    def __init__(self, b, name: str | None = None):
        self.name = name or f"p{uuid.uuid4().hex[:10]}"
        self.context = b.new_context(base_url=BASE_URL, viewport={"width": 1200, "height": 900})
        self.context.set_default_timeout(TIMEOUT_MS)
        self.page: Page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        # Every MakeMove the page sends, as gRPC-Web requests on the wire.
        self.moves_sent = 0
        self.page.on("request", self._count_moves)
        _players.append(self)

    def _count_moves(self, request) -> None:
        if request.url.endswith("/chess.gateway.v1.PlayService/MakeMove"):
            self.moves_sent += 1

    def goto(self, path: str) -> Page:
        self.page.goto(path)
        return self.page

    def register(self, password: str = PASSWORD) -> None:
        """Registers through the page's form; ends signed in, on the lobby."""
        page = self.goto("/register")
        page.get_by_label("Username").fill(self.name)
        page.get_by_label("Email").fill(f"{self.name}@example.com")
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Register").click()
        self.expect_signed_in()

    def sign_in(self, password: str = PASSWORD) -> None:
        page = self.goto("/login")
        page.get_by_label("Username or email").fill(self.name)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()

    def sign_out(self) -> None:
        self.page.get_by_role("button", name="Sign out", exact=True).click()
        expect(self.nav().get_by_role("link", name="Sign in")).to_be_visible()

    def lobby_form(self, testid: str):
        """One of the lobby's full forms ("create-seek", "play-computer",
        "send-challenge"), opening "Custom game" first if it is closed."""
        form = self.page.get_by_test_id(testid)
        toggle = self.page.get_by_test_id("custom-game")
        expect(toggle).to_be_visible()
        if toggle.get_attribute("aria-expanded") != "true":
            toggle.click()
        expect(form).to_be_visible()
        return form

    def nav(self):
        return self.page.get_by_role("navigation", name="Main")

    def expect_signed_in(self) -> None:
        expect(self.nav().get_by_role("link", name=self.name, exact=True)).to_be_visible()
        expect(self.page.get_by_role("button", name="Sign out", exact=True)).to_be_visible()

    def screenshot(self, name: str) -> str:
        """Saves the page as <OUT>/<name>.png and returns the path."""
        path = os.path.join(OUT, f"{re.sub(r'[^A-Za-z0-9_.-]', '-', name)}.png")
        # Let the board's move animation finish first.
        self.page.wait_for_timeout(300)
        self.page.screenshot(path=path, full_page=True)
        _screenshots.append(path)
        return path

    def assert_no_errors(self) -> None:
        assert not self.errors, f"{self.name}'s page logged errors:\n" + "\n".join(self.errors)

    def close(self) -> None:
        self.context.close()

    # --- On a game's page -------------------------------------------------

    def board(self):
        return self.page.get_by_test_id("board")

    def orientation(self) -> str:
        return self.board().get_attribute("data-orientation")

    def ply(self) -> int:
        return int(self.board().get_attribute("data-ply"))

    def expect_ply(self, ply: int) -> None:
        """Waits until the board has applied `ply` half-moves."""
        expect(self.board()).to_have_attribute("data-ply", str(ply))

    def square(self, name: str) -> tuple[float, float]:
        """The centre of square `name` (e.g. "e2") on the screen, as the
        board is turned."""
        box = self.board().locator("cg-board").bounding_box()
        assert box, "the board is not on screen"
        file, rank = "abcdefgh".index(name[0]), int(name[1]) - 1
        if self.orientation() == "white":
            column, row = file, 7 - rank
        else:
            column, row = 7 - file, rank
        size = box["width"] / 8
        return box["x"] + (column + 0.5) * size, box["y"] + (row + 0.5) * size

    def drag(self, origin: str, target: str) -> None:
        """Drags the piece on `origin` to `target` with the mouse."""
        mouse = self.page.mouse
        mouse.move(*self.square(origin))
        mouse.down()
        x, y = self.square(target)
        mouse.move(x, y, steps=6)
        mouse.up()

    def play(self, origin: str, target: str) -> None:
        """Drags a legal move and waits until the board has it."""
        ply = self.ply()
        self.drag(origin, target)
        self.expect_ply(ply + 1)

    def move_list(self) -> list[str]:
        """The moves in the list the server has confirmed, in order (SAN)."""
        texts = self.page.get_by_test_id("moves").locator(".san:not(.pending)").all_inner_texts()
        return [t for t in texts if t != "…"]


def two_players_in_a_game(b, colour: str = "White") -> tuple[Player, Player]:
    """Two new players, A and B: A challenges B from the lobby, playing
    `colour`; B accepts; both pages reach the new game with its position
    shown. Returns (A, B)."""
    a, b_ = Player(b), Player(b)
    a.register()
    b_.register()
    form = a.lobby_form("send-challenge")
    form.get_by_label("Opponent").fill(b_.name)
    form.get_by_label("Colour").select_option(label=colour)
    form.get_by_role("button", name="Send challenge").click()
    challenge = b_.page.locator('[data-testid=challenge][data-direction=incoming]')
    expect(challenge).to_contain_text(a.name)
    challenge.get_by_role("button", name="Accept").click()
    for p in (a, b_):
        expect(p.page).to_have_url(re.compile(r"/games/[A-Za-z0-9_-]+$"))
        p.expect_ply(0)
    return a, b_
