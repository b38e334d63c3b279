"""Scenario: a threefold repetition is offered to the players as a claim
only once it stands on the board, and claiming it draws the game.

A challenges B (A has white) and both move their knights out and back
twice. The start position stands a second time after four half-moves and a
third after eight; only then does each page show "Claim threefold". B
claims it, and both pages show the draw."""

import re

from browser import Player, browser, expect, two_players_in_a_game


def claim(p: Player):
    return p.page.get_by_role("button", name="Claim threefold")


def main() -> None:
    with browser() as b:
        a, b_ = two_players_in_a_game(b)
        for p in (a, b_):
            expect(p.page.get_by_role("button", name="Resign")).to_be_visible()
            expect(claim(p)).to_have_count(0)

        dance = [("g1", "f3"), ("g8", "f6"), ("f3", "g1"), ("f6", "g8")] * 2
        for ply, (origin, target) in enumerate(dance, start=1):
            player, other = (a, b_) if ply % 2 == 1 else (b_, a)
            player.play(origin, target)
            other.expect_ply(ply)
            if ply < len(dance):
                # Twice (after four half-moves) is not yet a claim.
                for p in (a, b_):
                    expect(claim(p)).to_have_count(0)
        for p in (a, b_):
            expect(claim(p)).to_be_visible()
        a.screenshot("threefold-claimable")

        claim(b_).click()
        for p in (a, b_):
            expect(p.page.get_by_test_id("result")).to_have_text(re.compile("Draw by threefold repetition"))
            expect(claim(p)).to_have_count(0)
        b_.screenshot("threefold-drawn")
        a.assert_no_errors()
        b_.assert_no_errors()
    print("repetition: ok")


if __name__ == "__main__":
    main()
