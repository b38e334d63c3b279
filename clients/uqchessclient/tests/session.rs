//! Standard-input commands against a scripted server: what is sent, what is
//! refused, how `started`, `ok`, `moved` and `gameover` change that, and
//! what is printed.

mod support;

use support::{INVALID, NO_GAME, NOT_YOUR_TURN, connected};

/// A board as the server sends it: the protocol's example, after 1. e4.
const BOARD: &str = include_str!("../../../docs/uqchess-board-after-e4.txt");

#[test]
fn before_the_game_starts_only_newgame_and_quit_act() {
    let (mut client, mut peer) = connected(&[], "start computer white");
    for command in ["print", "hint", "possible", "move e2e4", "resign"] {
        client.type_line(command);
        client.expect_stderr(NO_GAME);
    }
    client.type_line("newgame");
    peer.expect("start computer white");
    client.type_line("quit");
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn a_game_as_white_sends_each_command_on_the_right_turn() {
    let (mut client, mut peer) = connected(&["--colour", "white"], "start computer white");
    peer.send("started white\n");
    client.expect_stdout("started white");

    client.type_line("hint");
    peer.expect("hint best");
    peer.send("moves e2e4\n");
    client.expect_stdout("moves e2e4");

    client.type_line("possible");
    peer.expect("hint all");
    peer.send("moves a2a3 b2b3 c2c3\n");
    client.expect_stdout("moves a2a3 b2b3 c2c3");

    client.type_line("move e2e5");
    peer.expect("move e2e5");
    peer.send("error move\n");
    client.expect_stdout("error move");

    client.type_line("move e2e4");
    peer.expect("move e2e4");
    peer.send("ok\n");
    client.expect_stdout("ok");

    // The engine's turn now.
    for command in ["hint", "possible", "move d2d4"] {
        client.type_line(command);
        client.expect_stderr(NOT_YOUR_TURN);
    }
    client.type_line("print");
    peer.expect("board");
    peer.send(&format!("startboard\n{BOARD}endboard\n"));
    client.expect_stdout_raw(BOARD);

    peer.send("moved e7e5\n");
    client.expect_stdout("moved e7e5");
    client.type_line("move g1f3");
    peer.expect("move g1f3");

    client.type_line("quit");
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn a_game_as_black_waits_for_the_first_move() {
    let (mut client, mut peer) = connected(&["--colour", "black"], "start computer black");
    peer.send("started black\nmoved e2e4\n");
    client.expect_stdout("started black");
    client.expect_stdout("moved e2e4");
    client.type_line("move e7e5");
    peer.expect("move e7e5");
    peer.send("ok\n");
    client.expect_stdout("ok");
    client.type_line("hint");
    client.expect_stderr(NOT_YOUR_TURN);
    peer.send("moved d1h5\n");
    client.expect_stdout("moved d1h5");
    client.type_line("possible");
    peer.expect("hint all");
    client.close_stdin();
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn on_the_opponents_turn_print_and_resign_are_still_sent() {
    let (mut client, mut peer) = connected(&["--colour", "black"], "start computer black");
    peer.send("started black\n");
    client.expect_stdout("started black");
    for command in ["hint", "possible", "move e7e5"] {
        client.type_line(command);
        client.expect_stderr(NOT_YOUR_TURN);
    }
    client.type_line("print");
    peer.expect("board");
    client.type_line("resign");
    peer.expect("resign");
    peer.send("gameover resignation white\n");
    client.expect_stdout("gameover resignation white");
    client.type_line("quit");
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn check_and_errors_do_not_change_the_turn() {
    let (mut client, mut peer) = connected(&[], "start computer white");
    peer.send("started white\nerror engine\n");
    client.expect_stdout("started white");
    client.expect_stdout("error engine");
    client.type_line("move e2e4");
    peer.expect("move e2e4");
    peer.send("ok\nmoved f7f6\ncheck\nerror turn\n");
    for line in ["ok", "moved f7f6", "check", "error turn"] {
        client.expect_stdout(line);
    }
    client.type_line("move d1h5");
    peer.expect("move d1h5");
    peer.send("ok\ncheck\n");
    client.expect_stdout("ok");
    client.expect_stdout("check");
    client.type_line("hint");
    client.expect_stderr(NOT_YOUR_TURN);
    client.type_line("quit");
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn after_gameover_only_print_newgame_and_quit_act() {
    let (mut client, mut peer) = connected(&[], "start computer white");
    peer.send("started white\n");
    client.expect_stdout("started white");
    client.type_line("move f2f3");
    peer.expect("move f2f3");
    peer.send("ok\nmoved e7e5\n");
    client.expect_stdout("ok");
    client.expect_stdout("moved e7e5");
    client.type_line("move g2g4");
    peer.expect("move g2g4");
    peer.send("ok\nmoved d8h4\ngameover checkmate black\n");
    client.expect_stdout("ok");
    client.expect_stdout("moved d8h4");
    client.expect_stdout("gameover checkmate black");
    for command in ["hint", "possible", "move a2a3", "resign"] {
        client.type_line(command);
        client.expect_stderr(NO_GAME);
    }
    // The finished game's board stays available until a new game is asked for.
    client.type_line("print");
    peer.expect("board");
    peer.send(&format!("startboard\n{BOARD}endboard\n"));
    client.expect_stdout_raw(BOARD);
    client.type_line("newgame");
    peer.expect("start computer white");
    client.type_line("print");
    client.expect_stderr(NO_GAME);
    peer.send("started white\n");
    client.expect_stdout("started white");
    client.type_line("print");
    peer.expect("board");
    client.type_line("quit");
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn newgame_during_a_game_gives_it_up_until_the_new_one_starts() {
    let (mut client, mut peer) = connected(&["--colour", "black"], "start computer black");
    peer.send("started black\nmoved e2e4\n");
    client.expect_stdout("started black");
    client.expect_stdout("moved e2e4");
    client.type_line("newgame");
    peer.expect("start computer black");
    // Everything typed now would reach the new game, which has not started.
    for command in ["print", "hint", "possible", "move e7e5", "resign"] {
        client.type_line(command);
        client.expect_stderr(NO_GAME);
    }
    peer.send("gameover resignation white\n");
    client.expect_stdout("gameover resignation white");
    client.type_line("print");
    client.expect_stderr(NO_GAME);
    peer.send("started black\n");
    client.expect_stdout("started black");
    client.type_line("hint");
    client.expect_stderr(NOT_YOUR_TURN);
    client.type_line("print");
    peer.expect("board");
    peer.send("moved d2d4\n");
    client.expect_stdout("moved d2d4");
    client.type_line("hint");
    peer.expect("hint best");
    client.type_line("quit");
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn waiting_for_a_human_opponent_is_not_a_game() {
    let (mut client, mut peer) = connected(&["--versus", "human"], "start human either");
    for command in ["print", "hint", "possible", "move e2e4", "resign"] {
        client.type_line(command);
        client.expect_stderr(NO_GAME);
    }
    client.type_line("newgame");
    peer.expect("start human either");
    peer.send("started black\n");
    client.expect_stdout("started black");
    client.type_line("move e7e5");
    client.expect_stderr(NOT_YOUR_TURN);
    peer.send("moved e2e4\n");
    client.expect_stdout("moved e2e4");
    client.type_line("move e7e5");
    peer.expect("move e7e5");
    peer.send("ok\ngameover resignation black\n");
    client.expect_stdout("ok");
    client.expect_stdout("gameover resignation black");
    client.type_line("resign");
    client.expect_stderr(NO_GAME);
    client.type_line("quit");
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn invalid_commands_are_refused_and_nothing_is_sent() {
    let (mut client, mut peer) = connected(&[], "start computer white");
    peer.send("started white\n");
    client.expect_stdout("started white");
    for line in [
        "",
        " ",
        "newgame ",
        " print",
        "hint best",
        "HINT",
        "possible\r",
        "move",
        "move ",
        "move e2e",
        "move e2e4q5",
        "move  e2e4",
        "move e2e4 ",
        "move\te2e4",
        "move e2-4",
        "move e2e4 e7e5",
        "board",
        "start computer white",
        "resign now",
        "quit!",
        "exit",
    ] {
        client.type_line(line);
        client.expect_stderr(INVALID);
    }
    client.type_raw("move \u{e9}2e4\n");
    client.expect_stderr(INVALID);
    // Only the next valid command reaches the server.
    client.type_line("move g7g8q");
    peer.expect("move g7g8q");
    client.type_line("move A2a4");
    peer.expect("move A2a4");
    client.close_stdin();
    peer.expect_end();
    client.expect_exit(0);
}

#[test]
fn every_server_line_but_the_board_delimiters_is_printed_as_is() {
    let (mut client, mut peer) = connected(&[], "start computer white");
    let lines = "started white\nstartboard\n\nendboard\nstartboard \n endboard\nerror command\n\
                 something unexpected\nmoves a2a3\n";
    peer.send(lines);
    client.expect_stdout_raw(
        "started white\n\nstartboard \n endboard\nerror command\nsomething unexpected\nmoves a2a3\n",
    );
    client.type_line("quit");
    peer.expect_end();
    client.expect_exit(0);
}
