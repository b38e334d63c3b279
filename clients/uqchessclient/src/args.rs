//! The command line: `portnum [--versus computer|human] [--colour black|white]`.
//!
//! The first argument is always the port (a number or a service name), even
//! if it looks like an option: the options come after it, in either order,
//! each at most once and each followed by one of its values.

use std::ffi::{OsStr, OsString};

/// The usage line printed (on stderr) for any bad command line.
pub const USAGE: &str =
    "Usage: uqchessclient portnum [--versus computer|human] [--colour black|white]";

/// Who the user plays against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versus {
    Computer,
    Human,
}

/// A colour the user asked for on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    White,
    Black,
}

/// A valid command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The port number or service name, exactly as given.
    pub port: OsString,
    pub versus: Versus,
    /// `None` when `--colour` was not given.
    pub colour: Option<Colour>,
}

impl Options {
    /// The `start` message that asks the server for a game with these options.
    ///
    /// Against the computer the colour defaults to white (the server would
    /// read `either` as white too, but the client always names it); against a
    /// human it defaults to `either`.
    pub fn start_message(&self) -> &'static str {
        match (self.versus, self.colour) {
            (Versus::Computer, None | Some(Colour::White)) => "start computer white",
            (Versus::Computer, Some(Colour::Black)) => "start computer black",
            (Versus::Human, None) => "start human either",
            (Versus::Human, Some(Colour::White)) => "start human white",
            (Versus::Human, Some(Colour::Black)) => "start human black",
        }
    }
}

/// The command line does not match the usage line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageError;

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(USAGE)
    }
}

impl std::error::Error for UsageError {}

/// Parses the arguments that follow the program name.
pub fn parse<I>(args: I) -> Result<Options, UsageError>
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    let mut args = args.into_iter().map(Into::into);
    let port = args
        .next()
        .filter(|port| !port.is_empty())
        .ok_or(UsageError)?;
    let mut versus = None;
    let mut colour = None;
    while let Some(option) = args.next() {
        let value = args.next().ok_or(UsageError)?;
        match option.to_str() {
            Some("--versus") if versus.is_none() => {
                versus = Some(match value.to_str() {
                    Some("computer") => Versus::Computer,
                    Some("human") => Versus::Human,
                    _ => return Err(UsageError),
                });
            }
            Some("--colour") if colour.is_none() => {
                colour = Some(match value.to_str() {
                    Some("white") => Colour::White,
                    Some("black") => Colour::Black,
                    _ => return Err(UsageError),
                });
            }
            _ => return Err(UsageError),
        }
    }
    Ok(Options {
        port,
        versus: versus.unwrap_or(Versus::Computer),
        colour,
    })
}

/// The port as it should appear in the "can't connect" message.
pub fn display_port(port: &OsStr) -> &[u8] {
    use std::os::unix::ffi::OsStrExt;
    port.as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_strs(args: &[&str]) -> Result<Options, UsageError> {
        parse(args.iter().copied())
    }

    #[test]
    fn defaults_to_white_against_the_computer() {
        let options = parse_strs(&["1234"]).expect("valid");
        assert_eq!(options.port, "1234");
        assert_eq!(options.versus, Versus::Computer);
        assert_eq!(options.colour, None);
        assert_eq!(options.start_message(), "start computer white");
    }

    #[test]
    fn defaults_to_either_against_a_human() {
        let options = parse_strs(&["http", "--versus", "human"]).expect("valid");
        assert_eq!(options.start_message(), "start human either");
    }

    #[test]
    fn options_in_either_order() {
        let a = parse_strs(&["1", "--colour", "black", "--versus", "human"]).expect("valid");
        let b = parse_strs(&["1", "--versus", "human", "--colour", "black"]).expect("valid");
        assert_eq!(a, b);
        assert_eq!(a.start_message(), "start human black");
        let c = parse_strs(&["1", "--colour", "black"]).expect("valid");
        assert_eq!(c.start_message(), "start computer black");
        let d = parse_strs(&["1", "--versus", "computer", "--colour", "white"]).expect("valid");
        assert_eq!(d.start_message(), "start computer white");
        let e = parse_strs(&["1", "--colour", "white", "--versus", "human"]).expect("valid");
        assert_eq!(e.start_message(), "start human white");
    }

    #[test]
    fn the_first_argument_is_always_the_port() {
        let options = parse_strs(&["--versus"]).expect("valid");
        assert_eq!(options.port, "--versus");
    }

    #[test]
    fn rejects_bad_command_lines() {
        for args in [
            &[][..],
            &[""],
            &["", "--versus", "human"],
            &["1", ""],
            &["1", "--versus"],
            &["1", "--versus", ""],
            &["1", "--versus", "robot"],
            &["1", "--versus", "Human"],
            &["1", "--colour"],
            &["1", "--colour", "either"],
            &["1", "--colour", "red"],
            &["1", "--versus", "human", "--versus", "human"],
            &["1", "--colour", "white", "--colour", "black"],
            &["1", "--colour", "white", "--versus"],
            &["1", "2"],
            &["1", "--port", "2"],
            &["1", "--versus=human"],
            &["1", "-versus", "human"],
            &["1", "--versus", "human", "extra"],
        ] {
            assert_eq!(parse_strs(args), Err(UsageError), "{args:?}");
        }
    }
}
