"""Scenario: a rated game's end shows both rating changes, and the winner's
profile lists the game with its filters and a PGN download.

A posts a rated blitz seek (black), B requests it, A accepts; the fool's
mate (B has white) ends it. Both pages then show each player's new rating
with its change (+ for A, − for B). A's profile lists the game, won, with
the change; "Casual only" empties the list, "Rated only" brings it back;
"Download PGN" saves `<A>.pgn` holding the game."""

import re

from browser import Player, browser, expect


def main() -> None:
    with browser() as b:
        a, b_ = Player(b), Player(b)
        a.register()
        b_.register()

        form = a.lobby_form("create-seek")
        form.get_by_label("Time control").select_option(label="Minutes + increment")
        form.get_by_label("Minutes").fill("3")
        form.get_by_label("Increment (seconds)").fill("2")
        form.get_by_label("Colour").select_option(label="Black")
        form.get_by_label("Rated").check()
        form.get_by_role("button", name="Create").click()
        mine = a.page.locator("[data-testid=seek][data-mine]")
        expect(mine).to_have_count(1)
        seek_id = mine.get_attribute("data-seek-id")
        b_.page.locator(f'[data-testid=seek][data-seek-id="{seek_id}"]').get_by_role("button", name="Request").click()
        a.page.get_by_test_id("seek-request").get_by_role("button", name="Accept").click()
        for p in (a, b_):
            expect(p.page).to_have_url(re.compile(r"/games/[A-Za-z0-9_-]+$"))
            p.expect_ply(0)
        game_id = a.page.url.rsplit("/", 1)[1]
        for player, other, (origin, target) in [
            (b_, a, ("f2", "f3")),
            (a, b_, ("e7", "e5")),
            (b_, a, ("g2", "g4")),
        ]:
            player.play(origin, target)
            other.expect_ply(player.ply())
        a.play("d8", "h4")
        b_.expect_ply(4)

        # Both pages: the new ratings with their changes, A up and B down.
        for p in (a, b_):
            expect(p.page.get_by_test_id("result")).to_have_text(re.compile("Black wins by checkmate"))
            changes = p.page.get_by_test_id("rating-change")
            expect(changes).to_have_count(2)
            top_bottom = changes.all_inner_texts()
            assert any(t.startswith("+") for t in top_bottom), top_bottom
            assert any(t.startswith("−") for t in top_bottom), top_bottom
        b_.screenshot("game-end-rating-changes")

        # A's profile: the game, won, with the change.
        page = a.goto(f"/players/{a.name}")
        row = page.locator(f'[data-testid=history-game][data-game-id="{game_id}"]')
        expect(row).to_have_count(1)
        expect(row).to_have_attribute("data-outcome", "win")
        expect(row).to_contain_text(b_.name)
        expect(row.get_by_test_id("history-rating-change")).to_have_text(re.compile(r"\d+ \+\d+"))
        a.screenshot("profile-games")
        page.get_by_test_id("history-rated").select_option(label="Casual only")
        expect(page.get_by_test_id("history-game")).to_have_count(0)
        expect(page.get_by_test_id("history-status")).to_have_text("No finished games match.")
        page.get_by_test_id("history-rated").select_option(label="Rated only")
        expect(row).to_have_count(1)
        page.get_by_test_id("history-opponent").fill(b_.name)
        expect(row).to_have_count(1)

        with page.expect_download() as download:
            page.get_by_test_id("download-pgn").click()
        saved = download.value
        assert saved.suggested_filename == f"{a.name}.pgn", saved.suggested_filename
        text = open(saved.path(), encoding="utf-8").read()
        assert f'[GameId "{game_id}"]' in text and "Qh4#" in text, text

        # B's side of the same game: lost, down.
        page = b_.goto(f"/players/{b_.name}")
        row = page.locator(f'[data-testid=history-game][data-game-id="{game_id}"]')
        expect(row).to_have_attribute("data-outcome", "loss")
        expect(row.get_by_test_id("history-rating-change")).to_have_text(re.compile(r"\d+ −\d+"))
        b_.screenshot("profile-games-loser")

        a.assert_no_errors()
        b_.assert_no_errors()
    print("history: ok")


if __name__ == "__main__":
    main()
