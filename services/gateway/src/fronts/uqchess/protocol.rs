//! Parsing the client's lines, exactly as the protocol defines them: one
//! space between words, nothing before or after, nothing else.

/// Who a `start` asks to play.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Versus {
    Computer,
    Human,
}

/// The colour a `start` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colour {
    Either,
    White,
    Black,
}

/// A well-formed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Start { versus: Versus, colour: Colour },
    Board,
    Hint { all: bool },
    Move(String),
    Resign,
}

/// The request on `line` (without its newline), or `None` if it is not one:
/// the caller answers `error command`.
pub fn parse(line: &[u8]) -> Option<Request> {
    let line = std::str::from_utf8(line).ok()?;
    let words: Vec<&str> = line.split(' ').collect();
    Some(match words.as_slice() {
        ["start", versus, colour] => Request::Start {
            versus: match *versus {
                "computer" => Versus::Computer,
                "human" => Versus::Human,
                _ => return None,
            },
            colour: match *colour {
                "either" => Colour::Either,
                "white" => Colour::White,
                "black" => Colour::Black,
                _ => return None,
            },
        },
        ["board"] => Request::Board,
        ["hint", "best"] => Request::Hint { all: false },
        ["hint", "all"] => Request::Hint { all: true },
        ["move", m]
            if (4..=5).contains(&m.len()) && m.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            Request::Move((*m).to_owned())
        }
        ["resign"] => Request::Resign,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_lines() {
        assert_eq!(
            parse(b"start computer either"),
            Some(Request::Start {
                versus: Versus::Computer,
                colour: Colour::Either
            })
        );
        assert_eq!(
            parse(b"start human black"),
            Some(Request::Start {
                versus: Versus::Human,
                colour: Colour::Black
            })
        );
        assert_eq!(parse(b"board"), Some(Request::Board));
        assert_eq!(parse(b"hint best"), Some(Request::Hint { all: false }));
        assert_eq!(parse(b"hint all"), Some(Request::Hint { all: true }));
        assert_eq!(parse(b"move e2e4"), Some(Request::Move("e2e4".into())));
        assert_eq!(parse(b"move g7g8Q"), Some(Request::Move("g7g8Q".into())));
        assert_eq!(parse(b"move zz99"), Some(Request::Move("zz99".into())));
        assert_eq!(parse(b"resign"), Some(Request::Resign));
    }

    #[test]
    fn everything_else_is_a_command_error() {
        for line in [
            &b""[..],
            b" board",
            b"board ",
            b"board\r",
            b"start  computer either",
            b"start computer",
            b"start computer either now",
            b"start robot either",
            b"start computer red",
            b"hint",
            b"hint some",
            b"move",
            b"move e2e",
            b"move e2e4q1",
            b"move e2-e4",
            b"move e2e4 ",
            b"resign now",
            b"Board",
            b"\xff\xfe",
        ] {
            assert_eq!(parse(line), None, "{:?}", String::from_utf8_lossy(line));
        }
    }
}
