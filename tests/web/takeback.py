"""Scenario: a takeback asked for on the game page, declined, withdrawn
and then accepted.

A challenges B (a casual timed game, A has white). After 1. e4 e5 2. Nf3
only A may ask (B's last move is before the clocks started). A asks; B is
asked "A asks to take back a move" with Accept and Decline while A sees
"Takeback requested…" with Cancel. B declines and A is told; A asks again
and withdraws; A asks a third time and B accepts: both boards, move lists
and clocks go back to 1. e4 e5 with A to move, and A plays another move."""

import re

from browser import Player, browser, expect, two_players_in_a_game


def takeback(p: Player):
    return p.page.get_by_test_id("takeback")


def prompt(p: Player):
    return p.page.get_by_test_id("takeback-offer")


def main() -> None:
    with browser() as b:
        a, b_ = two_players_in_a_game(b)
        a.play("e2", "e4")
        b_.expect_ply(1)
        b_.play("e7", "e5")
        a.expect_ply(2)
        # Going back to before black's first move would restart the clocks.
        for p in (a, b_):
            expect(takeback(p)).to_have_count(0)
        a.play("g1", "f3")
        b_.expect_ply(3)
        expect(takeback(a)).to_be_visible()
        expect(takeback(b_)).to_have_count(0)

        # Asked, then declined.
        takeback(a).click()
        expect(prompt(a)).to_have_text(re.compile(r"Takeback requested…\s*Cancel"))
        expect(prompt(b_)).to_contain_text(f"{a.name} asks to take back a move.")
        expect(takeback(a)).to_have_count(0)
        b_.screenshot("takeback-asked")
        a.screenshot("takeback-requested")
        prompt(b_).get_by_role("button", name="Decline").click()
        for p in (a, b_):
            expect(prompt(p)).to_be_hidden()
        expect(a.page.get_by_role("status").filter(has_text="Black declined the takeback.")).to_be_visible()
        a.screenshot("takeback-declined")
        assert a.ply() == 3 and b_.ply() == 3

        # Asked, then withdrawn.
        takeback(a).click()
        expect(prompt(b_)).to_contain_text("asks to take back a move.")
        prompt(a).get_by_role("button", name="Cancel").click()
        for p in (a, b_):
            expect(prompt(p)).to_be_hidden()
        expect(b_.page.get_by_role("status").filter(has_text="White withdrew the takeback request.")).to_be_visible()

        # Asked, then accepted: both pages go back a move.
        takeback(a).click()
        prompt(b_).get_by_role("button", name="Accept").click()
        for p in (a, b_):
            p.expect_ply(2)
            expect(prompt(p)).to_be_hidden()
            assert p.move_list() == ["e4", "e5"], p.move_list()
            expect(p.page.get_by_role("status").filter(has_text="White's last move was taken back.")).to_be_visible()
        expect(a.page.get_by_test_id("status")).to_have_text("Your move")
        # White's clock is the one running again, on both pages.
        expect(a.page.locator(".player-bar.bottom .to-move")).to_be_visible()
        expect(b_.page.locator(".player-bar.top .to-move")).to_be_visible()
        a.screenshot("takeback-accepted")
        b_.screenshot("takeback-accepted-black")

        # The game goes on from there.
        a.play("d2", "d4")
        b_.expect_ply(3)
        for p in (a, b_):
            assert p.move_list() == ["e4", "e5", "d4"], p.move_list()
        a.assert_no_errors()
        b_.assert_no_errors()
    print("takeback: ok")


if __name__ == "__main__":
    main()
