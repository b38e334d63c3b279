"""Scenario: the page loads without errors; a player registers, signs out
and in again; a reload keeps the session; a wrong password shows the
server's own reason; the account page changes the password; /licences lists
the board's libraries."""

from browser import PASSWORD, Player, browser, expect

NEW_PASSWORD = "a brand new password"


def main() -> None:
    with browser() as b:
        visitor = Player(b)
        page = visitor.goto("/")
        expect(visitor.nav().get_by_role("link", name="Sign in")).to_be_visible()
        # The view's first calls (and a stream it keeps open, so no waiting
        # for the network to fall idle) have a moment to fail.
        page.wait_for_timeout(1000)
        visitor.screenshot("home-signed-out")
        visitor.assert_no_errors()

        player = Player(b)
        player.register()
        player.screenshot("registered")

        player.sign_out()
        player.sign_in()
        player.expect_signed_in()

        player.page.reload()
        player.expect_signed_in()
        player.screenshot("after-reload")

        # A wrong password: the server's sentence, not a status code, and
        # still signed out.
        player.sign_out()
        player.sign_in(password="not the password")
        alert = player.page.get_by_role("alert")
        expect(alert).to_have_text("Wrong login or password.")
        expect(player.nav().get_by_role("link", name="Sign in")).to_be_visible()
        player.screenshot("wrong-password")
        player.assert_no_errors()

        # A new password from the account page: a wrong current one is
        # refused; the right one keeps this tab signed in, and from then on
        # only the new password signs in.
        player.sign_in()
        player.expect_signed_in()
        page = player.goto("/account")
        for current in ["not the password", PASSWORD]:
            page.get_by_label("Current password").fill(current)
            page.get_by_label("New password").fill(NEW_PASSWORD)
            page.get_by_role("button", name="Change password").click()
            if current != PASSWORD:
                expect(page.get_by_role("alert").first).to_have_text("The old password is wrong.")
        expect(page.get_by_text("Password changed")).to_be_visible()
        player.screenshot("password-changed")
        page.reload()
        player.expect_signed_in()
        player.sign_out()
        player.sign_in()
        expect(player.page.get_by_role("alert")).to_have_text("Wrong login or password.")
        player.sign_in(password=NEW_PASSWORD)
        player.expect_signed_in()
        player.assert_no_errors()

        licences = player.goto("/licences")
        expect(licences.get_by_role("heading", name="Licences", exact=True)).to_be_visible()
        listed = licences.get_by_role("list").first.get_by_role("listitem").all_inner_texts()
        for package in ["@lichess-org/chessground", "chessops"]:
            assert any(item.startswith(f"{package} ") for item in listed), (
                f"/licences does not list {package}; it lists {listed}"
            )
        # The two share the GPL's text, shown once under both their names.
        shared = licences.get_by_role("heading", name="@lichess-org/chessground, chessops")
        expect(shared).to_be_visible()
        player.screenshot("licences")
    print("accounts: ok")


if __name__ == "__main__":
    main()
