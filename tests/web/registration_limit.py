"""Scenario: a gateway allowing two registrations at once from an address
(the stack runs with CHESS_GATEWAY_REGISTRATIONS_PER_ADDRESS=2): two
players register from the page; the third is refused with the wait in
words, and nothing is made."""

import re

from browser import PASSWORD, Player, browser, expect


def main() -> None:
    with browser() as b:
        for _ in range(2):
            Player(b).register()
        third = Player(b)
        page = third.goto("/register")
        page.get_by_label("Username").fill(third.name)
        page.get_by_label("Email").fill(f"{third.name}@example.com")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Register").click()
        expect(page.get_by_role("alert")).to_have_text(
            re.compile(r"^Too many accounts were registered from your network; try again in (1 minute|\d+ seconds)\.$")
        )
        expect(third.nav().get_by_role("link", name="Sign in")).to_be_visible()
        third.screenshot("registration-refused")
        third.assert_no_errors()
    print("registration_limit: ok")


if __name__ == "__main__":
    main()
