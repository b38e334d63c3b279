//! The client's view of the game: which terminal commands may be sent now,
//! and how each server line changes that view. Pure state, no I/O, so every
//! rule is unit-tested here.
//!
//! A game is in progress from `started` to `gameover`, and the turn changes
//! on every `ok` and `moved`. `newgame` gives up the current game at once on
//! the client side: the server processes requests in order, so anything
//! typed after it belongs to the new game, and the old game's last lines
//! (its `gameover resignation …`) no longer change what may be sent.

/// The user's side of a game, as far as the client can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// A game was requested (at start-up or by `newgame`) and has not
    /// started: waiting for the server or for a human opponent.
    Requested,
    /// Between `started` and `gameover`.
    Playing { my_turn: bool },
    /// After `gameover`, until the next `newgame`: only `print` is allowed.
    Finished,
}

/// What to do about one line typed on standard input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send this message (without its newline) to the server.
    Send(String),
    /// Send nothing; print this line on stderr.
    Refuse(Refusal),
    /// End the program with status 0, sending nothing.
    Quit,
}

/// Why a typed line was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not one of the commands, spelled exactly.
    Invalid,
    NoGame,
    NotYourTurn,
}

impl Refusal {
    /// The line printed on stderr.
    pub fn message(self) -> &'static str {
        match self {
            Self::Invalid => "Try again - command is not valid",
            Self::NoGame => "Invalid command - game not in progress",
            Self::NotYourTurn => "Invalid command - not your turn",
        }
    }
}

/// One terminal session with the server.
#[derive(Debug, Clone)]
pub struct Session {
    start: &'static str,
    phase: Phase,
}

impl Session {
    /// A session whose games are requested with `start` (see
    /// [`crate::args::Options::start_message`]); the first request is sent on
    /// connecting, so a game is already requested.
    pub fn new(start: &'static str) -> Self {
        Self {
            start,
            phase: Phase::Requested,
        }
    }

    /// The message that requests a game.
    pub fn start_message(&self) -> &'static str {
        self.start
    }

    /// Handles one line typed by the user, without its newline.
    pub fn on_input(&mut self, line: &[u8]) -> Action {
        let Some(command) = Command::parse(line) else {
            return Action::Refuse(Refusal::Invalid);
        };
        let in_game = matches!(self.phase, Phase::Playing { .. });
        let my_turn = matches!(self.phase, Phase::Playing { my_turn: true });
        let on_my_turn = |message: String| {
            if my_turn {
                Action::Send(message)
            } else if in_game {
                Action::Refuse(Refusal::NotYourTurn)
            } else {
                Action::Refuse(Refusal::NoGame)
            }
        };
        match command {
            Command::NewGame => {
                self.phase = Phase::Requested;
                Action::Send(self.start.to_owned())
            }
            Command::Print if self.phase == Phase::Requested => Action::Refuse(Refusal::NoGame),
            Command::Print => Action::Send("board".to_owned()),
            Command::Hint => on_my_turn("hint best".to_owned()),
            Command::Possible => on_my_turn("hint all".to_owned()),
            Command::Move(m) => on_my_turn(format!("move {m}")),
            Command::Resign if in_game => Action::Send("resign".to_owned()),
            Command::Resign => Action::Refuse(Refusal::NoGame),
            Command::Quit => Action::Quit,
        }
    }

    /// Handles one line from the server, without its newline, and says
    /// whether it is shown to the user (every line but the board delimiters).
    pub fn on_server_line(&mut self, line: &[u8]) -> bool {
        let mut words = line.split(|&b| b == b' ');
        let first = words.next().unwrap_or_default();
        match (first, words.next()) {
            (b"startboard" | b"endboard", None) => return false,
            (b"started", Some(b"white")) => self.phase = Phase::Playing { my_turn: true },
            (b"started", Some(b"black")) => self.phase = Phase::Playing { my_turn: false },
            (b"ok" | b"moved", _) => {
                if let Phase::Playing { my_turn } = &mut self.phase {
                    *my_turn = !*my_turn;
                }
            }
            (b"gameover", _) => {
                // A game ending after `newgame` is the old one: the board
                // of the game that replaces it is not available yet.
                if let Phase::Playing { .. } = self.phase {
                    self.phase = Phase::Finished;
                }
            }
            _ => {}
        }
        true
    }
}

/// A valid terminal command.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Command<'a> {
    NewGame,
    Print,
    Hint,
    Possible,
    Move(&'a str),
    Resign,
    Quit,
}

impl<'a> Command<'a> {
    /// Parses an exact command line: one word, or `move` and its argument
    /// separated by one space, nothing else.
    fn parse(line: &'a [u8]) -> Option<Self> {
        let line = std::str::from_utf8(line).ok()?;
        Some(match line {
            "newgame" => Self::NewGame,
            "print" => Self::Print,
            "hint" => Self::Hint,
            "possible" => Self::Possible,
            "resign" => Self::Resign,
            "quit" => Self::Quit,
            _ => {
                let m = line.strip_prefix("move ")?;
                let well_formed =
                    (4..=5).contains(&m.len()) && m.bytes().all(|b| b.is_ascii_alphanumeric());
                if !well_formed {
                    return None;
                }
                Self::Move(m)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(message: &str) -> Action {
        Action::Send(message.to_owned())
    }

    const REFUSE_NO_GAME: Action = Action::Refuse(Refusal::NoGame);
    const REFUSE_TURN: Action = Action::Refuse(Refusal::NotYourTurn);
    const REFUSE_INVALID: Action = Action::Refuse(Refusal::Invalid);

    /// A session that has received `lines` from the server.
    fn after(lines: &[&str]) -> Session {
        let mut session = Session::new("start computer white");
        for line in lines {
            session.on_server_line(line.as_bytes());
        }
        session
    }

    fn input(session: &mut Session, line: &str) -> Action {
        session.on_input(line.as_bytes())
    }

    /// Asserts that each of the typed `lines` is refused with `refusal`.
    fn refused(session: &mut Session, lines: &[&str], refusal: Action) {
        for line in lines {
            assert_eq!(input(session, line), refusal, "{line:?}");
        }
    }

    #[test]
    fn parses_exact_commands_only() {
        for valid in [
            "newgame",
            "print",
            "hint",
            "possible",
            "resign",
            "quit",
            "move e2e4",
            "move g7g8q",
            "move E2E4",
            "move 1234",
        ] {
            assert!(Command::parse(valid.as_bytes()).is_some(), "{valid:?}");
        }
        for invalid in [
            "",
            " ",
            "newgame ",
            " newgame",
            "new game",
            "NEWGAME",
            "print\r",
            "hint best",
            "move",
            "move ",
            "move e2e",
            "move e2e4q1",
            "move  e2e4",
            "move e2e4 ",
            "move e2-e4",
            "move e2e4\t",
            "move é2e4",
            "move\te2e4",
            "moves e2e4",
            "board",
            "start computer white",
            "quit now",
        ] {
            assert_eq!(Command::parse(invalid.as_bytes()), None, "{invalid:?}");
        }
        assert_eq!(Command::parse(b"move e2\xffe"), None);
    }

    #[test]
    fn invalid_commands_are_refused_in_any_state() {
        for lines in [
            &[][..],
            &["started white"],
            &["started black"],
            &["started white", "gameover resignation black"],
        ] {
            let mut session = after(lines);
            refused(&mut session, &["hello", "move e2"], REFUSE_INVALID);
        }
    }

    #[test]
    fn before_started_only_newgame_and_quit_act() {
        let mut session = after(&[]);
        refused(
            &mut session,
            &["print", "hint", "possible", "move e2e4", "resign"],
            REFUSE_NO_GAME,
        );
        assert_eq!(input(&mut session, "newgame"), send("start computer white"));
        assert_eq!(input(&mut session, "quit"), Action::Quit);
    }

    #[test]
    fn on_my_turn_everything_is_sent() {
        let mut session = after(&["started white"]);
        assert_eq!(input(&mut session, "print"), send("board"));
        assert_eq!(input(&mut session, "hint"), send("hint best"));
        assert_eq!(input(&mut session, "possible"), send("hint all"));
        assert_eq!(input(&mut session, "move e2e4"), send("move e2e4"));
        assert_eq!(input(&mut session, "move g7g8Q"), send("move g7g8Q"));
        assert_eq!(input(&mut session, "resign"), send("resign"));
    }

    #[test]
    fn on_the_opponents_turn_only_print_and_resign_are_sent() {
        let mut session = after(&["started black"]);
        assert_eq!(input(&mut session, "print"), send("board"));
        refused(
            &mut session,
            &["hint", "possible", "move e7e5"],
            REFUSE_TURN,
        );
        assert_eq!(input(&mut session, "resign"), send("resign"));
    }

    #[test]
    fn ok_and_moved_change_the_turn() {
        let mut session = after(&["started white"]);
        assert!(session.on_server_line(b"ok"));
        assert_eq!(input(&mut session, "hint"), REFUSE_TURN);
        assert!(session.on_server_line(b"moved e7e5"));
        assert_eq!(input(&mut session, "hint"), send("hint best"));
        assert!(session.on_server_line(b"check"));
        assert_eq!(input(&mut session, "hint"), send("hint best"));
        assert!(session.on_server_line(b"error move"));
        assert!(session.on_server_line(b"moves e2e4 d2d4"));
        assert_eq!(input(&mut session, "hint"), send("hint best"));
        session.on_server_line(b"ok");
        session.on_server_line(b"check");
        assert_eq!(input(&mut session, "move a2a3"), REFUSE_TURN);
        session.on_server_line(b"moved d8h4");
        assert_eq!(input(&mut session, "move a2a3"), send("move a2a3"));
    }

    #[test]
    fn gameover_ends_the_game_but_keeps_the_board() {
        let mut session = after(&["started white", "ok", "moved f7f6"]);
        assert!(session.on_server_line(b"gameover resignation black"));
        assert_eq!(input(&mut session, "print"), send("board"));
        refused(
            &mut session,
            &["hint", "possible", "move e2e4", "resign"],
            REFUSE_NO_GAME,
        );
        // Late lines after the end change nothing.
        session.on_server_line(b"moved e2e4");
        assert_eq!(input(&mut session, "hint"), REFUSE_NO_GAME);
        assert_eq!(input(&mut session, "print"), send("board"));
        session.on_server_line(b"gameover stalemate");
        assert_eq!(input(&mut session, "print"), send("board"));
    }

    #[test]
    fn newgame_gives_up_the_board_until_the_next_start() {
        let mut session = after(&["started white", "ok", "moved e7e5"]);
        assert_eq!(input(&mut session, "newgame"), send("start computer white"));
        // The old game is over for the client as soon as it asks for another.
        refused(&mut session, &["print", "hint", "resign"], REFUSE_NO_GAME);
        // The server's resignation of the old game does not bring its board back.
        session.on_server_line(b"gameover resignation black");
        assert_eq!(input(&mut session, "print"), REFUSE_NO_GAME);
        session.on_server_line(b"started black");
        assert_eq!(input(&mut session, "print"), send("board"));
        assert_eq!(input(&mut session, "hint"), REFUSE_TURN);
        session.on_server_line(b"moved e2e4");
        assert_eq!(input(&mut session, "hint"), send("hint best"));
    }

    #[test]
    fn newgame_after_a_finished_game_gives_up_its_board() {
        let mut session = after(&["started white", "gameover resignation black"]);
        assert_eq!(input(&mut session, "newgame"), send("start computer white"));
        assert_eq!(input(&mut session, "print"), REFUSE_NO_GAME);
    }

    #[test]
    fn waiting_for_a_human_is_not_a_game() {
        let mut session = Session::new("start human either");
        refused(&mut session, &["print", "move e2e4"], REFUSE_NO_GAME);
        assert_eq!(input(&mut session, "newgame"), send("start human either"));
        session.on_server_line(b"started white");
        assert_eq!(input(&mut session, "move e2e4"), send("move e2e4"));
    }

    #[test]
    fn board_delimiters_are_hidden_and_everything_else_shown() {
        let mut session = after(&["started white"]);
        assert!(!session.on_server_line(b"startboard"));
        assert!(!session.on_server_line(b"endboard"));
        for shown in [
            &b""[..],
            b" +---+---+",
            b"   a   b   c",
            b"startboard ",
            b"endboard x",
            b"error game",
            b"started either",
            b"\xff",
        ] {
            assert!(session.on_server_line(shown));
        }
    }

    #[test]
    fn malformed_started_lines_change_nothing() {
        let mut session = after(&[]);
        session.on_server_line(b"started");
        session.on_server_line(b"started either");
        session.on_server_line(b"startedwhite");
        assert_eq!(input(&mut session, "print"), REFUSE_NO_GAME);
    }
}
