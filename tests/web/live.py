"""Scenario: live games, the lobby's TV and the watcher counts.

A and B play a game; C, a visitor on the lobby, sees it on the TV board,
which follows each move, with the two players under it and the line
"N players online · 1 game in play". D opens the game's page: both
players' pages say "1 watching". C opens /live from the navigation and
finds the game there, at its move, with one spectator; the speed filter
hides it and brings it back; a click on its row opens it (now 2
watching). When A resigns, C's TV says "No game in play" and /live is
empty. Screenshots of the lobby and /live on a desktop and a 375×667
phone."""

import re

from browser import Player, browser, expect, two_players_in_a_game

PHONE = {"width": 375, "height": 667}
DESKTOP = {"width": 1200, "height": 900}


def main() -> None:
    with browser() as b:
        a, b_ = two_players_in_a_game(b)
        game_id = a.page.url.rsplit("/", 1)[1]

        c = Player(b, name="visitor")
        page = c.goto("/")
        tv = page.get_by_test_id("tv")
        screen = tv.locator(".tv-screen")
        expect(screen).to_have_attribute("data-game-id", game_id)
        expect(tv.get_by_test_id("tv-white")).to_contain_text(a.name)
        expect(tv.get_by_test_id("tv-black")).to_contain_text(b_.name)
        expect(tv.get_by_test_id("tv-empty")).to_be_hidden()
        expect(tv.get_by_test_id("board")).to_have_attribute("data-ply", "0")
        counts = page.get_by_test_id("live-counts")
        expect(counts).to_have_text("2 players online · 1 game in play")

        # The TV follows the moves.
        a.play("e2", "e4")
        expect(tv.get_by_test_id("board")).to_have_attribute("data-ply", "1")
        b_.play("e7", "e5")
        expect(tv.get_by_test_id("board")).to_have_attribute("data-ply", "2")
        expect(tv.locator("piece.pawn.white").first).to_be_visible()
        expect(tv.get_by_test_id("tv-watch")).to_have_attribute("href", f"/games/{game_id}")
        c.screenshot("lobby-tv")
        page.set_viewport_size(PHONE)
        c.screenshot("lobby-tv-phone")
        page.set_viewport_size(DESKTOP)

        # Nobody watches yet: the players' pages say nothing; then D does.
        for p in (a, b_):
            expect(p.page.get_by_test_id("watching")).to_be_hidden()
        d = Player(b, name="watcher")
        d.goto(f"/games/{game_id}")
        d.expect_ply(2)
        for p in (a, b_, d):
            expect(p.page.get_by_test_id("watching")).to_have_text("1 watching")

        # /live: the game, at move 2, one spectator.
        c.nav().get_by_role("link", name="Watch").click()
        expect(page).to_have_url(re.compile(r"/live$"))
        row = page.locator(f'[data-testid=live-game][data-game-id="{game_id}"]')
        expect(row).to_have_count(1)
        expect(row).to_contain_text(a.name)
        expect(row).to_contain_text(b_.name)
        expect(row.get_by_test_id("live-spectators")).to_have_text("1")
        expect(row.locator("td").nth(5)).to_have_text("2")
        speed = row.locator("td").nth(3).inner_text()
        a.play("g1", "f3")
        expect(row.locator("td").nth(5)).to_have_text("2")
        b_.play("b8", "c6")
        expect(row.locator("td").nth(5)).to_have_text("3")
        c.screenshot("live")
        page.set_viewport_size(PHONE)
        c.screenshot("live-phone")
        page.set_viewport_size(DESKTOP)

        # The filters: another speed hides it, its own brings it back.
        other = "Bullet" if speed != "Bullet" else "Blitz"
        page.get_by_label("Speed").select_option(label=other)
        expect(page).to_have_url(re.compile(rf"/live\?speed={other.lower()}$"))
        expect(page.get_by_test_id("live-game")).to_have_count(0)
        expect(page.get_by_test_id("live-empty")).to_have_text("No game in play matches these filters.")
        page.get_by_label("Speed").select_option(label=speed)
        expect(row).to_have_count(1)
        page.get_by_label("Games").select_option(label="Casual only" if "Rated" in row.inner_text() else "Rated only")
        expect(page.get_by_test_id("live-game")).to_have_count(0)
        page.get_by_label("Games").select_option(label="Rated and casual")
        expect(row).to_have_count(1)

        # A click on the row opens the game: now two watch.
        row.locator("td").nth(5).click()
        expect(page).to_have_url(re.compile(rf"/games/{game_id}$"))
        c.expect_ply(4)
        expect(a.page.get_by_test_id("watching")).to_have_text("2 watching")

        # Back on the lobby; the game ends: no game on the TV, none live.
        c.nav().get_by_role("link", name="Lobby").click()
        expect(screen).to_have_attribute("data-game-id", game_id)
        expect(counts).to_have_text(re.compile(r"· 1 game in play$"))
        expect(a.page.get_by_test_id("watching")).to_have_text("1 watching")
        a.page.get_by_role("button", name="Resign").click()
        a.page.get_by_role("button", name="Yes, resign").click()
        expect(a.page.get_by_test_id("result")).to_have_text(re.compile("Black wins by resignation"))
        expect(tv.get_by_test_id("tv-empty")).to_have_text("No game in play")
        expect(screen).to_be_hidden()
        expect(counts).to_have_text(re.compile(r"· 0 games in play$"))
        c.screenshot("lobby-no-game")
        d.goto("/live")
        expect(d.page.get_by_test_id("live-empty")).to_have_text("No game in play.")
        d.screenshot("live-empty")

        for p in (a, b_, c, d):
            p.assert_no_errors()
    print("live: ok")


if __name__ == "__main__":
    main()
