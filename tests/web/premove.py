"""Scenario: premoves in a real-time game. While black thinks, white drags
a move: it shows on the board and is played the moment black's move
arrives. A premove cancelled by a click on the board is not played, and
one that black's move makes illegal is dropped without a word."""

import re

from browser import Player, browser, expect, two_players_in_a_game


def premove(p: Player, origin: str, target: str) -> None:
    """Drags a premove and checks the board holds it, highlighted."""
    p.drag(origin, target)
    expect(p.board()).to_have_attribute("data-premove", f"{origin}{target}")
    expect(p.board().locator("square.current-premove:visible")).to_have_count(2)


def main() -> None:
    with browser() as b:
        a, b_ = two_players_in_a_game(b, "White")
        a.play("e2", "e4")
        b_.expect_ply(1)

        # Premoved while black thinks, played on black's answer.
        premove(a, "d2", "d4")
        a.screenshot("premove-queued")
        b_.play("e7", "e5")
        for p in (a, b_):
            p.expect_ply(3)
        assert a.move_list() == ["e4", "e5", "d4"], a.move_list()
        expect(a.board()).not_to_have_attribute("data-premove", re.compile(".*"))

        # Cancelled by a click on an empty square: not played.
        premove(a, "g1", "f3")
        sent = a.moves_sent
        x, y = a.square("a5")
        a.page.mouse.click(x, y)
        expect(a.board()).not_to_have_attribute("data-premove", re.compile(".*"))
        expect(a.board().locator("square.current-premove:visible")).to_have_count(0)
        b_.play("b8", "c6")
        a.expect_ply(4)
        a.page.wait_for_timeout(400)
        assert a.ply() == 4 and a.moves_sent == sent, "the cancelled premove was played"
        expect(a.page.get_by_test_id("status")).to_have_text("Your move")

        # Made illegal by black's move (the pawn it would take with is
        # taken): dropped, nothing sent, no error.
        a.play("g1", "f3")
        b_.expect_ply(5)
        premove(a, "d4", "e5")
        sent = a.moves_sent
        b_.play("e5", "d4")
        a.expect_ply(6)
        a.page.wait_for_timeout(400)
        assert a.ply() == 6 and a.moves_sent == sent, "the illegal premove was sent"
        expect(a.board()).not_to_have_attribute("data-premove", re.compile(".*"))
        expect(a.page.get_by_test_id("status")).to_have_text("Your move")
        expect(a.page.locator(".game-side .error")).to_have_text("")
        a.screenshot("premove-dropped")
        for p in (a, b_):
            p.assert_no_errors()
    print("premove: ok")


if __name__ == "__main__":
    main()
