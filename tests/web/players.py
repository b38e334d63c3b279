"""Scenario: the players directory, presence and muting on a profile, and
the chat switch on the account page.

Twelve players whose names share a prefix register (the stack is fresh, so
they are everyone). A and B start a rated blitz game; C, signed in with the
directory open, sees "12 players online", A and B "playing" and everyone
else online, every untried rating provisional ("1500?"). The fool's mate
ends the game (A wins); sorting by blitz rating, best first, puts A first
and B last; by games, A and B first. Ten a page makes two pages; the
search narrows as one types, finds nobody for an unknown prefix and says
why for a name no one can hold. On A's profile C mutes and unmutes A; on
the account page C switches chat off, which lasts a reload, and on again.
Screenshots on a desktop and on a 375×667 phone."""

import re
import uuid

from browser import Player, browser, expect


def rows(page):
    return page.get_by_test_id("player-row")


def names(page) -> list[str]:
    return [r.get_attribute("data-username") for r in rows(page).all()]


def main() -> None:
    tag = f"d{uuid.uuid4().hex[:5]}"
    with browser() as b:
        a, b_, c = Player(b, f"{tag}_alpha"), Player(b, f"{tag}_bravo"), Player(b, f"{tag}_carol")
        for p in (a, b_):
            p.register()

        # A and B start a rated blitz game (B has white).
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
        for player, other, (origin, target) in [(b_, a, ("f2", "f3")), (a, b_, ("e7", "e5")), (b_, a, ("g2", "g4"))]:
            player.play(origin, target)
            other.expect_ply(player.ply())

        # Nine more register one after another in one browser context, each
        # seen signed in (their account page asks Me), then forgotten by the
        # page without signing out: they stay online for a while.
        others = [f"{tag}_p{i}" for i in range(9)]
        filler = Player(b, f"{tag}_filler")
        for name in others:
            filler.name = name
            filler.register()
            filler.goto("/account")
            expect(filler.page.get_by_role("switch")).to_be_enabled()
            filler.page.evaluate("localStorage.clear()")
        filler.assert_no_errors()
        filler.close()
        c.register()
        everyone = sorted([a.name, b_.name, c.name, *others], key=str.lower)

        # The directory while A and B play.
        page = c.goto("/players")
        expect(c.nav().get_by_role("link", name="Players")).to_have_attribute("aria-current", "")
        page.get_by_test_id("players-search").fill(tag)
        expect(rows(page)).to_have_count(12)
        assert names(page) == everyone, names(page)
        expect(page.get_by_test_id("players-online")).to_have_text("12 players online")
        for p in (a, b_):
            expect(page.locator(f'[data-testid=player-row][data-username="{p.name}"] [data-testid=presence]')).to_have_attribute(
                "data-presence", "playing"
            )
        expect(page.locator(f'[data-testid=player-row][data-username="{c.name}"] [data-testid=presence]')).to_have_attribute(
            "data-presence", "online"
        )
        untried = page.locator(f'[data-testid=player-row][data-username="{others[0]}"] [data-testid=rating]')
        expect(untried).to_have_count(5)
        for text in untried.all_inner_texts():
            assert re.fullmatch(r"\d+\?", text.strip()), text
        c.screenshot("directory-while-playing")

        # The fool's mate: A wins.
        a.play("d8", "h4")
        b_.expect_ply(4)
        for p in (a, b_):
            expect(p.page.get_by_test_id("rating-change")).to_have_count(2)

        # Sorted by blitz rating, best first: A first, B last.
        page.reload()
        page.get_by_test_id("players-sort").select_option(label="Rating")
        expect(page.get_by_test_id("players-order")).to_have_value("desc")
        expect(rows(page).first).to_have_attribute("data-username", a.name)
        expect(rows(page).last).to_have_attribute("data-username", b_.name)
        expect(page).to_have_url(re.compile(r"sort=rating.*order=desc"))
        # Ascending: B first.
        page.get_by_test_id("players-order").select_option(label="Ascending")
        expect(rows(page).first).to_have_attribute("data-username", b_.name)
        # By games in blitz, most first: A and B, one game each.
        page.get_by_test_id("players-sort").select_option(label="Games")
        expect(rows(page).first.get_by_test_id("games")).to_have_text("1")
        assert set(names(page)[:2]) == {a.name, b_.name}, names(page)
        expect(rows(page).nth(2).get_by_test_id("games")).to_have_text("0")
        # In bullet nobody has played: by name, then.
        page.get_by_test_id("players-category").select_option(label="Bullet")
        expect(rows(page).first).to_have_attribute("data-username", everyone[-1])
        c.screenshot("directory-by-games")

        # Pages of ten, by name.
        page.get_by_test_id("players-sort").select_option(label="Name")
        page.get_by_test_id("players-per-page").select_option(label="10 per page")
        expect(rows(page)).to_have_count(10)
        expect(page.get_by_test_id("players-page")).to_have_text("page 1")
        assert names(page) == everyone[:10], names(page)
        page.get_by_role("button", name="Next").click()
        expect(page.get_by_test_id("players-page")).to_have_text("page 2")
        expect(rows(page)).to_have_count(2)
        assert names(page) == everyone[10:], names(page)
        expect(page.get_by_role("button", name="Next")).to_be_disabled()
        page.get_by_role("button", name="Previous").click()
        expect(rows(page)).to_have_count(10)
        expect(rows(page).first).to_have_attribute("data-username", everyone[0])

        # The search narrows as one types, in any case.
        search = page.get_by_test_id("players-search")
        search.fill(f"{tag}_AL".upper())
        expect(rows(page)).to_have_count(1)
        expect(rows(page).first).to_have_attribute("data-username", a.name)
        search.fill(f"{tag}_zz")
        expect(rows(page)).to_have_count(0)
        expect(page.get_by_test_id("players-empty")).to_have_text(f"No player's name starts with “{tag}_zz”.")
        search.fill("<b>bold</b>")
        expect(page.get_by_role("alert")).to_have_text("Usernames hold only letters, digits, _ and -.")
        search.fill(tag)
        expect(rows(page)).to_have_count(10)

        # A's profile: presence, and muting from C.
        rows(page).filter(has_text=a.name).get_by_role("link", name=a.name).click()
        expect(page).to_have_url(re.compile(f"/players/{a.name}$"))
        expect(page.get_by_test_id("presence")).to_have_attribute("data-presence", re.compile("online|playing"))
        mute = page.get_by_test_id("mute")
        expect(mute).to_have_text("Mute")
        expect(mute).to_be_enabled()
        mute.click()
        expect(mute).to_have_text("Unmute")
        expect(page.get_by_test_id("mute-status")).to_have_text("Muted: you will not see their chat messages.")
        c.screenshot("profile-muted")
        page.reload()
        expect(page.get_by_test_id("mute")).to_have_text("Unmute")
        page.get_by_test_id("mute").click()
        expect(page.get_by_test_id("mute")).to_have_text("Mute")
        # One's own profile has nothing to mute.
        c.goto(f"/players/{c.name}")
        expect(page.get_by_test_id("presence")).to_have_attribute("data-presence", "online")
        expect(page.get_by_test_id("mute")).to_have_count(0)

        # The chat switch on the account page lasts a reload.
        c.goto("/account")
        switch = page.get_by_role("switch")
        expect(switch).to_be_checked()
        expect(switch).to_be_enabled()
        switch.uncheck()
        expect(page.get_by_test_id("chat-settings")).to_contain_text("off: you neither see nor post chat messages")
        expect(switch).to_be_enabled()
        page.reload()
        expect(page.get_by_role("switch")).not_to_be_checked()
        expect(page.get_by_test_id("chat-muted")).to_be_hidden()
        c.screenshot("account-chat-off")
        page.get_by_role("switch").check()
        expect(page.get_by_test_id("chat-settings")).to_contain_text("Chat on")

        # On a phone.
        page.set_viewport_size({"width": 375, "height": 667})
        c.goto(f"/players?q={tag}&sort=rating&order=desc")
        expect(rows(page).first).to_have_attribute("data-username", a.name)
        c.screenshot("directory-phone")
        c.goto(f"/players/{a.name}")
        expect(page.get_by_test_id("mute")).to_have_text("Mute")
        c.screenshot("profile-phone")

        for p in (a, b_, c):
            p.assert_no_errors()
    print("players: ok")


if __name__ == "__main__":
    main()
