"""Scenario: the lobby's quick pairing grid. A clicks 3+2 and waits (the
tile says so, and a second click takes the seek back); B clicks 3+2 and
both land in the same rated game. The correspondence tile pairs two
players the same way. The full forms wait behind "Custom game", and a
rejected request says so on the requester's page."""

import re

from browser import Player, browser, expect

GAME_URL = re.compile(r"/games/[A-Za-z0-9_-]+$")


def tile(p: Player, tc: str):
    return p.page.locator(f'[data-testid=quick-pairing][data-tc="{tc}"]')


def main() -> None:
    with browser() as b:
        a, b_, c = Player(b), Player(b), Player(b)
        for p in (a, b_, c):
            p.register()

        # The grid is there; the full forms are folded away.
        expect(a.page.locator("[data-testid=quick-pairing]")).to_have_count(12)
        expect(a.page.get_by_test_id("create-seek")).to_be_hidden()

        # A clicks 3+2: the tile waits, and the seek is listed as A's.
        tile(a, "3+2").click()
        expect(tile(a, "3+2")).to_have_class(re.compile(r"\bwaiting\b"))
        expect(tile(a, "3+2")).to_contain_text("Waiting… Cancel")
        expect(a.page.locator("[data-testid=seek][data-mine]")).to_have_count(1)
        a.screenshot("quick-waiting")
        # A second click takes it back; a third posts it again.
        tile(a, "3+2").click()
        expect(tile(a, "3+2")).not_to_have_class(re.compile(r"\bwaiting\b"))
        expect(a.page.locator("[data-testid=seek][data-mine]")).to_have_count(0)
        tile(a, "3+2").click()
        expect(tile(a, "3+2")).to_have_class(re.compile(r"\bwaiting\b"))

        # B clicks 3+2 and both are in one rated 3+2 game.
        expect(b_.page.locator("[data-testid=seek]")).to_have_count(1)
        tile(b_, "3+2").click()
        for p in (a, b_):
            expect(p.page).to_have_url(GAME_URL)
            p.expect_ply(0)
        assert a.page.url == b_.page.url, (a.page.url, b_.page.url)
        expect(a.page.locator(".game-info")).to_contain_text("3+2 · rated")
        a.screenshot("quick-game")

        # Correspondence: C waits at the daily tile, A joins from the lobby.
        tile(c, "corr").click()
        expect(tile(c, "corr")).to_have_class(re.compile(r"\bwaiting\b"))
        a.goto("/")
        expect(a.page.locator("[data-testid=seek]")).to_have_count(1)
        tile(a, "corr").click()
        for p in (a, c):
            expect(p.page).to_have_url(GAME_URL)
            p.expect_ply(0)
        assert a.page.url == c.page.url
        expect(a.page.locator(".game-info")).to_contain_text("daily")

        # B posts a seek through the custom form, accepting each request;
        # C asks, B rejects, and C's page says so.
        b_.goto("/")
        form = b_.lobby_form("create-seek")
        expect(form.get_by_label("Min rating")).to_have_attribute("placeholder", "any")
        form.get_by_label("Rated").uncheck()
        form.get_by_role("button", name="Create").click()
        expect(b_.page.locator("[data-testid=seek][data-mine]")).to_have_count(1)
        c.goto("/")
        row = c.page.locator("[data-testid=seek]")
        expect(row).to_have_count(1)
        row.get_by_role("button", name="Request").click()
        note = c.page.get_by_test_id("request-note")
        expect(note).to_have_text("Request sent: the game starts when the player accepts it.")
        b_.page.get_by_test_id("seek-request").get_by_role("button", name="Reject").click()
        expect(note).to_contain_text("Your request to play a seek was rejected.")
        c.screenshot("request-rejected")

        b_.page.set_viewport_size({"width": 375, "height": 667})
        b_.screenshot("lobby-phone")
        for p in (a, b_, c):
            p.assert_no_errors()
    print("quick_pairing: ok")


if __name__ == "__main__":
    main()
