//! The running client: the terminal and the socket are each read by a thread
//! of their own, and the main thread handles their lines one at a time in the
//! order they arrive, so the session and every output stream have a single
//! owner.
//!
//! The reading threads are never joined: the program ends by returning from
//! `main` while they may still be blocked in a read, which is what lets
//! `quit` end it without waiting for the server, and the server's departure
//! end it without waiting for the terminal.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::mpsc::{self, Sender};

use crate::session::{Action, Session};
use crate::{SERVER_GONE, WELCOME, error_line, status};

/// What the reading threads report.
#[derive(Debug)]
enum Event {
    /// A complete line typed by the user, without its newline.
    Input(Vec<u8>),
    /// Standard input ended (or failed); a partial last line is dropped.
    InputEnd,
    /// A line from the server with its newline, or the unterminated rest
    /// the server sent before closing.
    Server(Vec<u8>),
    /// The server closed the connection (or it failed).
    ServerEnd,
}

/// Greets the user, asks for the first game with `start` and plays until
/// the user quits or the server goes away; returns the exit status.
pub(crate) fn play(start: &'static str, reader: TcpStream, mut writer: TcpStream) -> u8 {
    let (events, inbox) = mpsc::channel();
    spawn("uqchessclient-terminal", {
        let events = events.clone();
        move || read_terminal(&events)
    });
    spawn("uqchessclient-socket", move || read_server(reader, &events));

    let mut stdout = std::io::stdout().lock();
    let mut session = Session::new(start);
    print(&mut stdout, format!("{WELCOME}\n").as_bytes());
    send(&mut writer, session.start_message());

    for event in inbox {
        match event {
            Event::Input(line) => match session.on_input(&line) {
                Action::Send(message) => send(&mut writer, &message),
                Action::Refuse(refusal) => error_line(refusal.message().as_bytes()),
                Action::Quit => return status::DONE,
            },
            Event::InputEnd => return status::DONE,
            Event::Server(line) => {
                let content = line.strip_suffix(b"\n").unwrap_or(&line);
                if session.on_server_line(content) {
                    print(&mut stdout, &line);
                }
            }
            Event::ServerEnd => break,
        }
    }
    error_line(SERVER_GONE.as_bytes());
    status::SERVER_GONE
}

fn spawn(name: &str, body: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(body)
        .expect("a process that just connected can start its two reading threads");
}

/// Sends the user's lines to the main thread until standard input ends.
fn read_terminal(events: &Sender<Event>) {
    let mut stdin = std::io::stdin().lock();
    loop {
        let mut line = Vec::new();
        match stdin.read_until(b'\n', &mut line) {
            Ok(_) if line.last() == Some(&b'\n') => {
                line.pop();
                if events.send(Event::Input(line)).is_err() {
                    return;
                }
            }
            _ => break,
        }
    }
    // The main thread may already have finished; then nobody needs to know.
    let _finished = events.send(Event::InputEnd);
}

/// Sends the server's lines to the main thread until the connection ends.
fn read_server(socket: TcpStream, events: &Sender<Event>) {
    let mut socket = BufReader::new(socket);
    loop {
        let mut line = Vec::new();
        let result = socket.read_until(b'\n', &mut line);
        // Bytes read before an error or the end were still sent by the server.
        if !line.is_empty() && events.send(Event::Server(line)).is_err() {
            return;
        }
        if matches!(result, Ok(0) | Err(_)) {
            break;
        }
    }
    // The main thread may already have finished; then nobody needs to know.
    let _finished = events.send(Event::ServerEnd);
}

/// Writes `bytes` to stdout at once.
fn print(stdout: &mut impl Write, bytes: &[u8]) {
    // A closed stdout must not end the game: the user can still play blind,
    // and the program still ends on `quit`, end of input or the server leaving.
    let _stdout_closed = stdout.write_all(bytes).and_then(|()| stdout.flush());
}

/// Sends one message and its newline in a single write.
fn send(socket: &mut TcpStream, message: &str) {
    let line = format!("{message}\n");
    // A failed write means the connection is gone; the socket thread sees the
    // same end and reports it, after any lines the server sent before.
    let _connection_gone = socket.write_all(line.as_bytes());
}
