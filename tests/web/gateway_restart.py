"""Scenario: the gateway is killed (SIGKILL) in the middle of a game and
comes back; both pages show "Reconnecting…", recover on their own, and no
move is lost or played twice — not even the one made while the gateway
was down.

A challenges B from the lobby; B accepts; they play 1. e4 e5. Then the
gateway dies (chess-stack, whose pid is CHESS_STACK_PID, starts it again on
the same socket), and A drags Nf3 at once. Both boards reach Nf3, B answers
Nc6, and a fresh load of the game from the server shows the same four
moves."""

import os
import signal
import time

from browser import browser, expect, two_players_in_a_game

WATCH_BANNER = """() => {
  window.sawReconnecting = false;
  const banner = document.getElementById("connection");
  new MutationObserver(() => {
    if (!banner.hidden) window.sawReconnecting = true;
  }).observe(banner, { attributes: true });
}"""


def gateway_pid() -> int:
    """The chess-gateway process chess-stack runs."""
    stack = os.environ["CHESS_STACK_PID"]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parent = f.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                program = f.read().split(b"\0")[0]
        except OSError:
            continue
        if parent == stack and program.endswith(b"chess-gateway"):
            return int(pid)
    raise AssertionError(f"chess-stack (pid {stack}) runs no chess-gateway")


def main() -> None:
    with browser() as b:
        a, b_ = two_players_in_a_game(b)

        a.play("e2", "e4")
        b_.expect_ply(1)
        b_.play("e7", "e5")
        a.expect_ply(2)

        for p in (a, b_):
            p.page.evaluate(WATCH_BANNER)
        killed = gateway_pid()
        os.kill(killed, signal.SIGKILL)
        # A moves at once, while the gateway is down or coming back.
        a.drag("g1", "f3")

        for p in (a, b_):
            p.expect_ply(3)
            expect(p.page.locator("#connection")).to_be_hidden()
            assert p.page.evaluate("window.sawReconnecting"), f"{p.name}'s page never showed Reconnecting…"
        deadline = time.monotonic() + 10
        while (restarted := gateway_pid_or_none()) in (None, killed) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert restarted not in (None, killed), "the gateway was not restarted"
        a.screenshot("after-restart")

        b_.play("b8", "c6")
        a.expect_ply(4)
        for p in (a, b_):
            assert p.move_list() == ["e4", "e5", "Nf3", "Nc6"], (p.name, p.move_list())
        # The server has exactly these moves: a fresh load shows them.
        b_.page.reload()
        b_.expect_ply(4)
        assert b_.move_list() == ["e4", "e5", "Nf3", "Nc6"], b_.move_list()
        b_.screenshot("reloaded")
        for p in (a, b_):
            # Calls cut by the kill may log a failed request; nothing else.
            errors = [e for e in p.errors if "Failed to load resource" not in e and "ERR_" not in e]
            assert not errors, f"{p.name}'s page logged errors:\n" + "\n".join(errors)
    print("gateway restart: ok")


def gateway_pid_or_none() -> int | None:
    try:
        return gateway_pid()
    except AssertionError:
        return None


if __name__ == "__main__":
    main()
