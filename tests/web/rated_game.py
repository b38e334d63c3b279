"""Scenario: two players meet in the lobby and play a rated game to
checkmate with the mouse.

A posts a blitz seek with the name hidden; B sees it without A's name and
requests it; A accepts; both land on the game. They play the fool's mate
(B has white) with real drags; an illegal drag snaps back and sends
nothing; each board shows the other's move without a reload; the clock of
the side to move ticks (from black's first move); both pages show the result; the leaderboard has
both players with new ratings."""

import re

from browser import Player, browser, expect


def main() -> None:
    with browser() as b:
        a, b_ = Player(b), Player(b)
        a.register()
        b_.register()

        # A posts a rated 3+2 seek, playing black, name hidden.
        form = a.lobby_form("create-seek")
        form.get_by_label("Time control").select_option(label="Minutes + increment")
        form.get_by_label("Minutes").fill("3")
        form.get_by_label("Increment (seconds)").fill("2")
        form.get_by_label("Colour").select_option(label="Black")
        form.get_by_label("Rated").check()
        form.get_by_label("Show my name").uncheck()
        form.get_by_role("button", name="Create").click()
        mine = a.page.locator('[data-testid=seek][data-mine]')
        expect(mine).to_have_count(1)
        seek_id = mine.get_attribute("data-seek-id")

        # B sees it, anonymous, and asks to play.
        row = b_.page.locator(f'[data-testid=seek][data-seek-id="{seek_id}"]')
        expect(row).to_be_visible()
        expect(row).to_contain_text("Anonymous")
        expect(row).not_to_contain_text(a.name)
        b_.screenshot("lobby")
        row.get_by_role("button", name="Request").click()

        # A accepts; both go to the game.
        request = a.page.get_by_test_id("seek-request")
        expect(request).to_contain_text(b_.name)
        a.screenshot("lobby-request")
        request.get_by_role("button", name="Accept").click()
        for p in (a, b_):
            expect(p.page).to_have_url(re.compile(r"/games/[A-Za-z0-9_-]+$"))
            p.expect_ply(0)
        assert a.page.url == b_.page.url, (a.page.url, b_.page.url)
        assert a.orientation() == "black" and b_.orientation() == "white"

        # An illegal drag (a pawn three squares) snaps back, sends nothing.
        sent = b_.moves_sent
        b_.drag("e2", "e5")
        b_.page.wait_for_timeout(300)
        assert b_.ply() == 0 and b_.moves_sent == sent, "the illegal drag was played or sent"
        b_.expect_ply(0)

        # The fool's mate, each move seen on the other board without a reload.
        for player, other, (origin, target) in [
            (b_, a, ("f2", "f3")),
            (a, b_, ("e7", "e5")),
            (b_, a, ("g2", "g4")),
        ]:
            player.play(origin, target)
            other.expect_ply(player.ply())
            if player is a:
                # The clocks start with black's first move: white's runs now,
                # on both pages, and its reading falls while B thinks.
                for p in (a, b_):
                    clock = p.page.get_by_test_id("clock-white")
                    expect(clock).to_have_attribute("data-running", re.compile(".*"))
                    before = clock.inner_text()
                    p.page.wait_for_timeout(1100)
                    assert clock.inner_text() != before, f"white's clock stood still at {before}"
                    assert p.page.get_by_test_id("clock-black").get_attribute("data-running") is None
        a.screenshot("game-in-progress")
        a.play("d8", "h4")
        b_.expect_ply(4)
        for p in (a, b_):
            expect(p.page.get_by_test_id("result")).to_have_text(re.compile("Black wins by checkmate"))
            assert p.move_list() == ["f3", "e5", "g4", "Qh4#"], p.move_list()
        b_.screenshot("game-finished")
        a.screenshot("game-finished-black")
        assert b_.moves_sent == 2 and a.moves_sent == 2, (b_.moves_sent, a.moves_sent)

        # The leaderboard: both rated in blitz, the winner above.
        page = a.goto("/leaderboard")
        for p in (a, b_):
            row = page.get_by_test_id("leaderboard-row").filter(has_text=p.name)
            expect(row).to_have_count(1)
        names = page.get_by_test_id("leaderboard-row").all_inner_texts()
        winner = next(i for i, t in enumerate(names) if a.name in t)
        loser = next(i for i, t in enumerate(names) if b_.name in t)
        assert winner < loser, names
        ratings = [
            float(re.search(r"\d+(\.\d+)?", page.get_by_test_id("leaderboard-row").filter(has_text=p.name).get_by_test_id("rating").inner_text())[0])
            for p in (a, b_)
        ]
        assert ratings[0] > ratings[1], ratings
        a.screenshot("leaderboard")

        a.assert_no_errors()
        b_.assert_no_errors()
    print("rated game: ok")


if __name__ == "__main__":
    main()
