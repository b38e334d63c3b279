//! What an engine's output lines mean.
//!
//! [`Line::parse`] classifies one line; the types here are what a search, a
//! perft run or the handshake report. Parsing is strict about the lines we
//! depend on (a malformed number or move in an `info`, `bestmove` or perft line
//! is an error) and lenient about everything else (unknown lines and unknown
//! `info` fields are passed over), as the UCI specification asks of GUIs.

use std::{fmt, str::FromStr};

use shakmaty::uci::UciMove;

/// A line the engine wrote that does not mean what it should.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{why} in {line:?}")]
pub struct ParseError {
    /// The offending line.
    pub line: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// An evaluation from the side to move's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Score {
    /// Centipawns.
    Cp(i32),
    /// Moves to mate: positive when the side to move mates, negative (or
    /// zero, when already mated) when it is mated.
    Mate(i32),
}

/// Whether a score is exact or only a bound found during a re-search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Bound {
    /// The score is exact.
    #[default]
    Exact,
    /// The true score is at least this.
    Lower,
    /// The true score is at most this.
    Upper,
}

/// One `info` line; fields the engine did not send are `None` or empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Info {
    pub depth: Option<u32>,
    pub seldepth: Option<u32>,
    /// Which principal variation this is (1 is the best).
    pub multipv: Option<u32>,
    pub score: Option<Score>,
    pub bound: Bound,
    pub nodes: Option<u64>,
    pub nps: Option<u64>,
    /// Milliseconds since the search started.
    pub time_ms: Option<u64>,
    pub hashfull: Option<u32>,
    pub tbhits: Option<u64>,
    pub currmove: Option<UciMove>,
    pub currmovenumber: Option<u32>,
    /// Win, draw and loss in permille, when `UCI_ShowWDL` is on.
    pub wdl: Option<(u32, u32, u32)>,
    /// The principal variation.
    pub pv: Vec<UciMove>,
    /// Free text (`info string …`).
    pub string: Option<String>,
}

/// The end of a search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BestMove {
    /// The move; `None` when the position has no legal move (`bestmove (none)`).
    pub best: Option<UciMove>,
    /// The expected reply, if the engine gave one.
    pub ponder: Option<UciMove>,
}

/// An option the engine declared during the handshake.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OptionInfo {
    pub name: String,
    /// `check`, `spin`, `combo`, `button` or `string`.
    pub kind: String,
    pub default: Option<String>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    /// The choices of a `combo` option.
    pub vars: Vec<String>,
}

/// One line of engine output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// An empty (or blank) line; ends a perft listing.
    Empty,
    ReadyOk,
    UciOk,
    /// `id name …` or `id author …`.
    Id {
        key: String,
        value: String,
    },
    Option(OptionInfo),
    Info(Box<Info>),
    BestMove(BestMove),
    /// `<move>: <count>` from `go perft`.
    PerftMove(UciMove, u64),
    /// `Nodes searched: <n>` after a perft listing.
    NodesSearched(u64),
    /// Anything else (banners, unknown commands echoed back, …).
    Other(String),
}

impl Line {
    /// Classifies `line` (without its line break).
    pub fn parse(line: &str) -> Result<Self, ParseError> {
        let error = |why| ParseError {
            line: line.to_owned(),
            why,
        };
        let mut tokens = line.split_ascii_whitespace();
        let Some(first) = tokens.next() else {
            return Ok(Self::Empty);
        };
        Ok(match first {
            "readyok" => Self::ReadyOk,
            "uciok" => Self::UciOk,
            "id" => match tokens.next() {
                Some(key) => Self::Id {
                    key: key.to_owned(),
                    value: tokens.collect::<Vec<_>>().join(" "),
                },
                None => return Err(error("id without a key")),
            },
            "option" => Self::Option(parse_option(tokens).map_err(error)?),
            "info" => Self::Info(Box::new(parse_info(line, tokens).map_err(error)?)),
            "bestmove" => Self::BestMove(parse_bestmove(tokens).map_err(error)?),
            "Nodes" if tokens.next() == Some("searched:") => {
                Self::NodesSearched(number(tokens.next()).map_err(error)?)
            }
            perft if perft.ends_with(':') => {
                let mv = perft
                    .strip_suffix(':')
                    .and_then(|m| UciMove::from_ascii(m.as_bytes()).ok())
                    .ok_or_else(|| error("malformed move in a perft line"))?;
                let count = number(tokens.next()).map_err(error)?;
                if tokens.next().is_some() {
                    return Err(error("trailing text in a perft line"));
                }
                Self::PerftMove(mv, count)
            }
            _ => Self::Other(line.to_owned()),
        })
    }
}

fn number<T: FromStr>(token: Option<&str>) -> Result<T, &'static str> {
    token
        .ok_or("missing number")?
        .parse()
        .map_err(|_| "malformed number")
}

fn uci_move(token: Option<&str>) -> Result<UciMove, &'static str> {
    UciMove::from_ascii(token.ok_or("missing move")?.as_bytes()).map_err(|_| "malformed move")
}

fn parse_bestmove<'a>(mut tokens: impl Iterator<Item = &'a str>) -> Result<BestMove, &'static str> {
    let best = match tokens.next() {
        None => return Err("bestmove without a move"),
        Some("(none)" | "0000") => None,
        Some(token) => Some(uci_move(Some(token))?),
    };
    let ponder = match tokens.next() {
        None => None,
        Some("ponder") => match tokens.next() {
            Some("(none)" | "0000") => None,
            token => Some(uci_move(token)?),
        },
        Some(_) => return Err("unexpected text after the best move"),
    };
    Ok(BestMove { best, ponder })
}

fn parse_info<'a>(
    line: &str,
    mut tokens: impl Iterator<Item = &'a str>,
) -> Result<Info, &'static str> {
    let mut info = Info::default();
    while let Some(key) = tokens.next() {
        match key {
            "depth" => info.depth = Some(number(tokens.next())?),
            "seldepth" => info.seldepth = Some(number(tokens.next())?),
            "multipv" => info.multipv = Some(number(tokens.next())?),
            "nodes" => info.nodes = Some(number(tokens.next())?),
            "nps" => info.nps = Some(number(tokens.next())?),
            "time" => info.time_ms = Some(number(tokens.next())?),
            "hashfull" => info.hashfull = Some(number(tokens.next())?),
            "tbhits" => info.tbhits = Some(number(tokens.next())?),
            "currmove" => info.currmove = Some(uci_move(tokens.next())?),
            "currmovenumber" => info.currmovenumber = Some(number(tokens.next())?),
            "score" => {
                info.score = Some(match tokens.next() {
                    Some("cp") => Score::Cp(number(tokens.next())?),
                    Some("mate") => Score::Mate(number(tokens.next())?),
                    _ => return Err("score is neither cp nor mate"),
                });
            }
            "lowerbound" => info.bound = Bound::Lower,
            "upperbound" => info.bound = Bound::Upper,
            "wdl" => {
                info.wdl = Some((
                    number(tokens.next())?,
                    number(tokens.next())?,
                    number(tokens.next())?,
                ));
            }
            "pv" => {
                // The principal variation runs to the end of the line.
                for token in tokens.by_ref() {
                    info.pv.push(uci_move(Some(token))?);
                }
            }
            "string" => {
                // Free text to the end of the line, spacing preserved.
                let text = line
                    .split_once(" string ")
                    .map(|(_, text)| text.to_owned())
                    .unwrap_or_default();
                info.string = Some(text);
                break;
            }
            // Fields we do not use (`refutation`, `currline`, `cpuload`, …)
            // are skipped one token at a time: harmless, as none of our keys
            // can be mistaken for their values.
            _ => {}
        }
    }
    Ok(info)
}

fn parse_option<'a>(tokens: impl Iterator<Item = &'a str>) -> Result<OptionInfo, &'static str> {
    #[derive(Clone, Copy, PartialEq)]
    enum Field {
        None,
        Name,
        Kind,
        Default,
        Min,
        Max,
        Var,
    }
    let mut option = OptionInfo::default();
    let mut field = Field::None;
    let mut words: Vec<&str> = Vec::new();
    let mut finish = |field: Field, words: &mut Vec<&str>| -> Result<(), &'static str> {
        let text = words.join(" ");
        words.clear();
        match field {
            Field::None => {}
            Field::Name => option.name = text,
            Field::Kind => option.kind = text,
            Field::Default => option.default = Some(text),
            Field::Min => option.min = Some(text.parse().map_err(|_| "malformed min")?),
            Field::Max => option.max = Some(text.parse().map_err(|_| "malformed max")?),
            Field::Var => option.vars.push(text),
        }
        Ok(())
    };
    for token in tokens {
        let next = match token {
            "name" if field == Field::None => Field::Name,
            "type" => Field::Kind,
            "default" => Field::Default,
            "min" => Field::Min,
            "max" => Field::Max,
            "var" => Field::Var,
            word => {
                words.push(word);
                continue;
            }
        };
        finish(field, &mut words)?;
        field = next;
    }
    finish(field, &mut words)?;
    if option.name.is_empty() {
        return Err("option without a name");
    }
    Ok(option)
}

impl fmt::Display for Score {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cp(cp) => write!(f, "cp {cp}"),
            Self::Mate(n) => write!(f, "mate {n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asserts that none of `lines` parses.
    fn refused(lines: &[&str]) {
        for line in lines {
            assert!(Line::parse(line).is_err(), "{line:?} parsed");
        }
    }

    fn mv(s: &str) -> UciMove {
        s.parse().unwrap()
    }

    /// The info `line` parses to.
    fn info_line(line: &str) -> Info {
        match Line::parse(line).unwrap() {
            Line::Info(info) => *info,
            other => panic!("{line:?} is not an info line: {other:?}"),
        }
    }

    #[test]
    fn info_lines() {
        let line = "info depth 10 seldepth 13 multipv 1 score cp -35 nodes 39060 nps 976500 \
                    hashfull 12 tbhits 0 time 40 pv c7c5 c2c3 g8f6";
        let info = info_line(line);
        assert_eq!(
            info,
            Info {
                depth: Some(10),
                seldepth: Some(13),
                multipv: Some(1),
                score: Some(Score::Cp(-35)),
                bound: Bound::Exact,
                nodes: Some(39060),
                nps: Some(976_500),
                time_ms: Some(40),
                hashfull: Some(12),
                tbhits: Some(0),
                pv: vec![mv("c7c5"), mv("c2c3"), mv("g8f6")],
                ..Info::default()
            }
        );
    }

    #[test]
    fn info_mates_bounds_and_promotions() {
        let info = info_line("info depth 3 score mate -2 upperbound nodes 5 pv a7a8q b1a1");
        assert_eq!(info.score, Some(Score::Mate(-2)));
        assert_eq!(info.bound, Bound::Upper);
        assert_eq!(info.pv, vec![mv("a7a8q"), mv("b1a1")]);

        let info = info_line("info depth 0 score mate 0");
        assert_eq!(info.score, Some(Score::Mate(0)));
        assert!(info.pv.is_empty());

        let info = info_line("info depth 12 currmove e2e4 currmovenumber 3");
        assert_eq!(info.currmove, Some(mv("e2e4")));
        assert_eq!(info.currmovenumber, Some(3));
        assert_eq!(info.score, None);

        let info = info_line("info depth 5 score cp 7 wdl 100 800 100");
        assert_eq!(info.wdl, Some((100, 800, 100)));
    }

    #[test]
    fn info_strings_keep_their_text() {
        let info = info_line("info string NNUE evaluation using nn-ad9b42354671.nnue enabled");
        assert_eq!(
            info.string.as_deref(),
            Some("NNUE evaluation using nn-ad9b42354671.nnue enabled")
        );
        // Words that look like keys inside the string are text.
        let info = info_line("info string depth pv x");
        assert_eq!(info.depth, None);
        assert_eq!(info.string.as_deref(), Some("depth pv x"));
    }

    #[test]
    fn malformed_info_is_an_error() {
        refused(&[
            "info depth x",
            "info depth",
            "info score 12",
            "info pv e2e4 zz",
        ]);
    }

    #[test]
    fn bestmove_lines() {
        assert_eq!(
            Line::parse("bestmove e2e4 ponder e7e5").unwrap(),
            Line::BestMove(BestMove {
                best: Some(mv("e2e4")),
                ponder: Some(mv("e7e5")),
            })
        );
        assert_eq!(
            Line::parse("bestmove g7g8n").unwrap(),
            Line::BestMove(BestMove {
                best: Some(mv("g7g8n")),
                ponder: None,
            })
        );
        assert_eq!(
            Line::parse("bestmove (none)").unwrap(),
            Line::BestMove(BestMove {
                best: None,
                ponder: None,
            })
        );
        refused(&["bestmove", "bestmove e9e4", "bestmove e2e4 e7e5"]);
    }

    #[test]
    fn perft_lines() {
        assert_eq!(
            Line::parse("e1g1: 1").unwrap(),
            Line::PerftMove(mv("e1g1"), 1)
        );
        assert_eq!(
            Line::parse("b7b8q: 44").unwrap(),
            Line::PerftMove(mv("b7b8q"), 44)
        );
        assert_eq!(
            Line::parse("Nodes searched: 48").unwrap(),
            Line::NodesSearched(48)
        );
        assert_eq!(Line::parse("").unwrap(), Line::Empty);
        assert_eq!(Line::parse("   ").unwrap(), Line::Empty);
        refused(&["e1g1: x", "zz: 1", "Nodes searched: many"]);
    }

    #[test]
    fn handshake_lines() {
        assert_eq!(Line::parse("readyok").unwrap(), Line::ReadyOk);
        assert_eq!(Line::parse("uciok").unwrap(), Line::UciOk);
        assert_eq!(
            Line::parse("id name Stockfish 15.1").unwrap(),
            Line::Id {
                key: "name".into(),
                value: "Stockfish 15.1".into()
            }
        );
        assert_eq!(
            Line::parse("option name Skill Level type spin default 20 min 0 max 20").unwrap(),
            Line::Option(OptionInfo {
                name: "Skill Level".into(),
                kind: "spin".into(),
                default: Some("20".into()),
                min: Some(0),
                max: Some(20),
                vars: vec![],
            })
        );
        assert_eq!(
            Line::parse("option name Debug Log File type string default ").unwrap(),
            Line::Option(OptionInfo {
                name: "Debug Log File".into(),
                kind: "string".into(),
                default: Some(String::new()),
                ..OptionInfo::default()
            })
        );
        assert_eq!(
            Line::parse("option name Style type combo default Normal var Solid var Normal")
                .unwrap(),
            Line::Option(OptionInfo {
                name: "Style".into(),
                kind: "combo".into(),
                default: Some("Normal".into()),
                vars: vec!["Solid".into(), "Normal".into()],
                ..OptionInfo::default()
            })
        );
        assert!(Line::parse("option type spin").is_err());
        assert_eq!(
            Line::parse("Stockfish 15.1 by the Stockfish developers (see AUTHORS file)").unwrap(),
            Line::Other("Stockfish 15.1 by the Stockfish developers (see AUTHORS file)".into())
        );
    }
}
