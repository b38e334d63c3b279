//! How the client ends: `quit` and end of input (0, nothing more sent), the
//! server going away (8), and never by SIGPIPE when its output is closed.

mod support;

use support::{Client, GONE, NO_GAME, Server, WELCOME, accepted_with, connected, type_until_sent};

#[test]
fn quit_exits_0_sending_nothing_more() {
    let (mut client, mut peer) = connected(&[], "start computer white");
    peer.send("started white\n");
    client.expect_stdout("started white");
    client.type_line("quit");
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn quit_ends_the_client_while_waiting_for_a_human() {
    let (mut client, peer) = connected(
        &["--versus", "human", "--colour", "white"],
        "start human white",
    );
    client.type_line("quit");
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn commands_after_quit_are_never_read() {
    let (mut client, mut peer) = connected(&[], "start computer white");
    peer.send("started white\n");
    client.expect_stdout("started white");
    client.type_raw("quit\nhint\nnewgame\n");
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn end_of_input_exits_0_sending_nothing_more() {
    let (mut client, mut peer) = connected(&[], "start computer white");
    peer.send("started white\n");
    client.expect_stdout("started white");
    client.type_line("hint");
    peer.expect("hint best");
    client.close_stdin();
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn a_partial_last_line_is_ignored() {
    let (mut client, mut peer) = connected(&[], "start computer white");
    peer.send("started white\n");
    client.expect_stdout("started white");
    client.type_raw("newgame\nhint");
    peer.expect("start computer white");
    client.close_stdin();
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn a_partial_invalid_last_line_is_not_reported() {
    let (mut client, peer) = connected(&[], "start computer white");
    client.type_raw("nonsense");
    client.close_stdin();
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn the_server_closing_exits_8_after_printing_what_it_sent() {
    let (mut client, mut peer) = connected(&[], "start computer white");
    peer.send("started white\nmoved e2e4\n");
    peer.close();
    client.expect_stdout("started white");
    client.expect_stdout("moved e2e4");
    client.expect_stderr(GONE);
    client.expect_exit(8);
}

#[test]
fn the_server_closing_before_any_reply_exits_8() {
    let server = Server::new();
    let mut client = Client::start(&[&server.port.to_string(), "--versus", "human"]);
    let mut peer = server.accept();
    peer.expect("start human either");
    peer.close();
    client.expect_stdout(WELCOME);
    client.expect_stderr(GONE);
    client.expect_exit(8);
}

#[test]
fn an_unterminated_last_server_line_is_printed_as_received() {
    let (mut client, mut peer) = connected(&[], "start computer white");
    peer.send("started white\nmoves e2");
    peer.close();
    client.expect_stdout_raw("started white\nmoves e2");
    client.expect_stderr(GONE);
    client.expect_exit(8);
}

#[test]
fn commands_typed_after_the_server_left_do_not_hide_its_departure() {
    let (mut client, mut peer) = connected(&[], "start computer white");
    peer.send("started white\n");
    client.expect_stdout("started white");
    peer.close();
    // Whichever of these the client handles before noticing the departure
    // (none, if it has already exited), it ends the same way.
    client.type_raw_unless_exited("hint\npossible\nhint\npossible\n");
    client.expect_stderr(GONE);
    client.expect_exit(8);
}

#[test]
fn a_closed_stdout_does_not_end_the_client() {
    let (mut client, mut peer) = accepted_with(false, true);
    peer.expect("start computer white");
    // Printing these fails; the client must go on and act on them.
    peer.send("started white\nstartboard\n\n +---+\nendboard\nmoves e2e4\n");
    type_until_sent(&mut client, &mut peer, "hint", "hint best", NO_GAME);
    peer.send("moves e2e4\n");
    client.type_line("move e2e4");
    peer.expect("move e2e4");
    peer.send("ok\n");
    client.type_line("resign");
    peer.expect("resign");
    peer.close();
    client.expect_stderr(GONE);
    // A zero or chosen exit code: not killed by SIGPIPE.
    client.expect_exit(8);
}

#[test]
fn a_closed_stderr_does_not_end_the_client() {
    let (mut client, mut peer) = accepted_with(true, false);
    client.expect_stdout(WELCOME);
    peer.expect("start computer white");
    // Each refusal is written to the closed stderr; the command after it
    // reaching the server first shows that nothing was sent for it.
    client.type_line("print");
    client.type_line("nonsense");
    client.type_line("newgame");
    peer.expect("start computer white");
    peer.send("started black\n");
    client.expect_stdout("started black");
    client.type_line("hint");
    client.type_line("resign");
    peer.expect("resign");
    client.type_line("quit");
    peer.expect_end();
    // A zero or chosen exit code: not killed by SIGPIPE.
    client.expect_exit(0);
}

#[test]
fn closed_stdout_and_stderr_do_not_end_the_client() {
    let (mut client, mut peer) = accepted_with(false, false);
    peer.expect("start computer white");
    peer.send("started white\nmoves e2e4\n");
    client.type_line("nonsense");
    client.type_line("newgame");
    peer.expect("start computer white");
    peer.send("gameover resignation black\nstarted white\n");
    client.type_line("newgame");
    peer.expect("start computer white");
    peer.close();
    // A zero or chosen exit code: not killed by SIGPIPE.
    client.expect_exit(8);
}
