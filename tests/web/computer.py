"""Scenario: play the computer at full strength from the lobby; it answers
the player's move on its own, gives a hint, and the player resigns."""

import re

from browser import Player, browser, expect


def main() -> None:
    with browser() as b:
        player = Player(b)
        player.register()
        form = player.lobby_form("play-computer")
        form.get_by_label("Level").select_option(label="Full strength")
        form.get_by_label("Colour").select_option(label="White")
        form.get_by_role("button", name="Play").click()
        page = player.page
        expect(page).to_have_url(re.compile(r"/games/[A-Za-z0-9_-]+$"))
        player.expect_ply(0)
        assert player.orientation() == "white"
        expect(page.get_by_role("main")).to_contain_text("Stockfish")

        player.play("e2", "e4")
        # Stockfish answers by itself (a search of at most 500 ms).
        player.expect_ply(2)
        assert player.move_list()[0] == "e4" and len(player.move_list()) == 2, player.move_list()
        expect(page.get_by_test_id("status")).to_contain_text("Your move")

        page.get_by_role("button", name="Hint").click()
        expect(page.get_by_text(re.compile(r"^Hint:"))).to_be_visible()
        player.screenshot("computer-hint")

        page.get_by_role("button", name="Resign").click()
        page.get_by_role("button", name="Yes, resign").click()
        expect(page.get_by_test_id("result")).to_have_text(re.compile("Black wins by resignation"))
        player.screenshot("computer-resigned")

        # The next step: the same settings again, a new game at once.
        finished = page.url
        steps = page.get_by_test_id("next-steps")
        expect(steps.get_by_test_id("back-to-lobby")).to_be_visible()
        steps.get_by_test_id("new-game-same-settings").click()
        expect(page).not_to_have_url(finished)
        expect(page).to_have_url(re.compile(r"/games/[A-Za-z0-9_-]+$"))
        player.expect_ply(0)
        assert player.orientation() == "white"
        expect(page.get_by_role("main")).to_contain_text("Stockfish")
        expect(page.get_by_test_id("next-steps")).to_be_hidden()
        player.assert_no_errors()
    print("computer: ok")


if __name__ == "__main__":
    main()
