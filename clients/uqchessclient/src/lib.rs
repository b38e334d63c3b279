//! `uqchessclient`: the terminal client of the uqchess line protocol
//! (`shared/protocols/uqchess.md`), byte for byte.
//!
//! - [`args`]: the command line and the `start` message it implies.
//! - [`connect`]: connecting to localhost by port number or service name
//!   (the way `uqchessserver` names its port too).
//! - [`session`]: game-state and turn tracking: which typed commands are sent,
//!   which refused, and which server lines are shown.
//! - `terminal` (private): the running program, with one thread reading the
//!   terminal, one reading the socket, and the main thread owning the session
//!   and all output, so every line is handled whole and in arrival order.
//!
//! Output never kills the program: Rust starts every binary with SIGPIPE
//! ignored, and write errors on stdout, stderr and the socket are handled
//! rather than panicked on (no `println!`).

pub mod args;
pub mod connect;
pub mod session;
mod terminal;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

/// The line printed once connected.
pub const WELCOME: &str = "Welcome to UQChessClient - written by the Rookery developers";

/// The line printed when the server closes the connection.
pub const SERVER_GONE: &str = "uqchessclient: server has gone away";

/// Exit statuses, as the protocol fixes them.
pub mod status {
    /// `quit` or end of standard input.
    pub const DONE: u8 = 0;
    /// The server closed the connection.
    pub const SERVER_GONE: u8 = 8;
    /// Nothing accepted a connection on the port.
    pub const CANNOT_CONNECT: u8 = 11;
    /// The command line does not match the usage line.
    pub const USAGE: u8 = 13;
}

/// Runs the client with the arguments that follow the program name and
/// returns its exit status.
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let Ok(options) = args::parse(args) else {
        error_line(args::USAGE.as_bytes());
        return ExitCode::from(status::USAGE);
    };
    // The socket is read by one thread while another writes to it; a process
    // that cannot even duplicate its socket cannot play on it.
    let connection = connect::connect(&options.port).and_then(|socket| {
        Ok((
            socket
                .try_clone()
                .map_err(|_no_descriptor| connect::CannotConnect)?,
            socket,
        ))
    });
    let Ok((reader, writer)) = connection else {
        let mut line = b"uqchessclient: can't connect to port \"".to_vec();
        line.extend_from_slice(args::display_port(&options.port));
        line.push(b'"');
        error_line(&line);
        return ExitCode::from(status::CANNOT_CONNECT);
    };
    ExitCode::from(terminal::play(options.start_message(), reader, writer))
}

/// Prints one line on stderr.
fn error_line(line: &[u8]) {
    let mut buffer = Vec::with_capacity(line.len() + 1);
    buffer.extend_from_slice(line);
    buffer.push(b'\n');
    // With stderr closed there is nowhere left to report anything.
    let _nowhere_to_report = std::io::stderr().lock().write_all(&buffer);
}
