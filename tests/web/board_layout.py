"""Scenario: the board as a player sees it on a desktop and on a 375×667
phone: each file letter sits in its own file of the bottom rank and each
rank number in its own rank, in a readable size and in a colour that
stands out from its square; the players' colour markers are discs; a move
pair stays together in the move list; refusals are plain sentences, and an
unknown game's page leads back to the lobby."""

import re

from browser import Player, browser, expect

PHONE = {"width": 375, "height": 667}
DESKTOP = {"width": 1200, "height": 900}


def luminance(rgb: str) -> float:
    """The relative luminance of a CSS "rgb(r, g, b)" colour."""
    channels = [int(c) / 255 for c in re.findall(r"\d+", rgb)[:3]]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


# The board's two square colours, as style.css draws them.
SQUARE = {"light": "rgb(240, 217, 181)", "dark": "rgb(181, 136, 99)"}


def check_coordinates(player: Player, where: str) -> None:
    page = player.page
    board = player.board().locator("cg-board").bounding_box()
    assert board, "no board on screen"
    size = board["width"] / 8
    white = player.orientation() == "white"
    files = page.locator(".board coords.files coord")
    ranks = page.locator(".board coords.ranks coord")
    expect(files).to_have_count(8)
    expect(ranks).to_have_count(8)
    for i in range(8):
        coord = files.nth(i)
        letter = coord.inner_text().strip()
        column = "abcdefgh".index(letter) if white else 7 - "abcdefgh".index(letter)
        box = coord.bounding_box()
        assert box, f"{where}: file {letter} is not on screen"
        left, right = board["x"] + column * size, board["x"] + (column + 1) * size
        centre = box["x"] + box["width"] / 2
        # The letter's text lies inside its own file, on the bottom rank.
        glyph = page.evaluate(
            """(el) => { const r = document.createRange(); r.selectNodeContents(el);
                        const b = r.getBoundingClientRect(); return [b.left, b.right, b.top, b.bottom]; }""",
            coord.element_handle(),
        )
        assert left - 0.5 <= glyph[0] and glyph[1] <= right + 0.5, (
            f"{where}: the letter {letter} spans {glyph[0]:.1f}–{glyph[1]:.1f}, not inside its file "
            f"{left:.1f}–{right:.1f} (box centre {centre:.1f})"
        )
        bottom = board["y"] + board["height"]
        assert bottom - size - 0.5 <= glyph[2] and glyph[3] <= bottom + 0.5, f"{where}: the letter {letter} is off the bottom rank"
    for i in range(8):
        coord = ranks.nth(i)
        number = int(coord.inner_text().strip())
        row = 8 - number if white else number - 1
        glyph = page.evaluate(
            """(el) => { const r = document.createRange(); r.selectNodeContents(el);
                        const b = r.getBoundingClientRect(); return [b.top, b.bottom]; }""",
            coord.element_handle(),
        )
        top = board["y"] + row * size
        assert top - 0.5 <= glyph[0] and glyph[1] <= top + size + 0.5, f"{where}: the rank {number} is not in its row"
    # Readable: at least 11 px, and each colour stands out from its square.
    for kind in ("light", "dark"):
        coords = page.locator(f".board coords coord.coord-{kind}")
        style = coords.first.evaluate("(el) => { const s = getComputedStyle(el); return [s.fontSize, s.color, s.opacity]; }")
        assert float(style[0].removesuffix("px")) >= 11, f"{where}: coordinates are {style[0]}"
        ratio = contrast(style[1], SQUARE[kind])
        assert ratio >= 3, f"{where}: {kind}-square coordinates in {style[1]} have contrast {ratio:.1f}"


def main() -> None:
    with browser() as b:
        player = Player(b)
        player.register()
        page = player.page
        form = player.lobby_form("play-computer")
        form.get_by_label("Level").select_option("1")
        form.get_by_label("Colour").select_option(label="White")
        form.get_by_role("button", name="Play").click()
        expect(page).to_have_url(re.compile(r"/games/[A-Za-z0-9_-]+$"))
        player.expect_ply(0)
        game_url = page.url

        # The colour markers are round, not boxes.
        for swatch in page.locator(".player-bar .swatch").all():
            assert swatch.evaluate("(el) => getComputedStyle(el).borderRadius") == "50%"

        check_coordinates(player, "desktop")
        player.play("e2", "e4")
        player.expect_ply(2)
        # The pair "1. e4 …" sits together at the left, not spread over the list.
        first = page.get_by_test_id("moves").locator("li").first
        num = first.locator(".num").bounding_box()
        black = first.locator(".san").nth(1).bounding_box()
        assert num and black and black["x"] + black["width"] - num["x"] < 16 * 16, (num, black)
        # A refused typed move reads as a sentence, not as the parser's words.
        page.get_by_label("Move", exact=True).fill("Ke7")
        page.get_by_role("button", name="Play", exact=True).click()
        expect(page.get_by_role("alert").filter(has_text="Ke7")).to_have_text("Ke7 is not a legal move here.")
        player.screenshot("desktop-game")

        page.set_viewport_size(PHONE)
        page.goto(game_url)
        player.expect_ply(2)
        check_coordinates(player, "phone")
        player.screenshot("phone-game")

        # As black on the phone the board turns, and the coordinates with it.
        page.goto("/")
        form = player.lobby_form("play-computer")
        form.get_by_label("Level").select_option("1")
        form.get_by_label("Colour").select_option(label="Black")
        form.get_by_role("button", name="Play").click()
        expect(page).to_have_url(re.compile(r"/games/[A-Za-z0-9_-]+$"))
        player.expect_ply(1)
        assert player.orientation() == "black"
        check_coordinates(player, "phone, as black")
        player.screenshot("phone-game-black")

        # An unknown game: a plain sentence and a way back. (The address
        # itself answers 404, which the browser logs: the only error allowed.)
        player.assert_no_errors()
        page.set_viewport_size(DESKTOP)
        page.goto("/games/doesnotexist")
        missing = page.get_by_test_id("game-missing")
        expect(missing).to_contain_text("There is no game doesnotexist.")
        player.screenshot("unknown-game")
        missing.get_by_role("link", name="Back to the lobby").click()
        expect(page.get_by_role("heading", name="Lobby")).to_be_visible()
        assert all("status of 404" in e for e in player.errors), player.errors
    print("board_layout: ok")


if __name__ == "__main__":
    main()
