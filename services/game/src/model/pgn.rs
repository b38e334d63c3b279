//! Games in PGN: the seven-tag roster and the usual extra tags, SAN moves
//! with `[%clk]` comments for timed games, and the result.

use std::fmt::Write as _;

use chess_domain::{TimeControl, Timestamp};

use super::{
    clock::Millis,
    game::{Game, GameResult, STARTING_FEN, Termination},
};

/// Longest movetext line.
const LINE_WIDTH: usize = 80;

/// The date `(year, month, day)` of `days` since 1970-01-01 (proleptic
/// Gregorian calendar).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `(YYYY.MM.DD, HH:MM:SS)` in UTC for `at`.
fn utc_date_time(at: Timestamp) -> (String, String) {
    let secs = at.secs();
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let tod = secs.rem_euclid(86_400);
    (
        format!("{y:04}.{m:02}.{d:02}"),
        format!("{:02}:{:02}:{:02}", tod / 3600, tod % 3600 / 60, tod % 60),
    )
}

/// `H:MM:SS` for a clock comment.
fn clock_text(ms: Millis) -> String {
    let secs = ms.max(0) / 1000;
    format!("{}:{:02}:{:02}", secs / 3600, secs % 3600 / 60, secs % 60)
}

/// Escapes a tag value.
fn tag_value(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The PGN of `game`. `site` is the server's name or address.
pub fn export(game: &Game, site: &str) -> String {
    let ending = game.ending();
    let result = GameResult::pgn_of(ending.and_then(|e| e.result));
    let speed = game.time_control().speed();
    let event = format!(
        "{} {speed} game",
        if game.rated() { "Rated" } else { "Casual" }
    );
    let (date, time) = utc_date_time(game.created_at());
    let termination = Termination::pgn_tag_of(ending.map(|e| e.termination));

    let mut out = String::new();
    let mut tag = |name: &str, value: &str| {
        let _ = writeln!(out, "[{name} \"{}\"]", tag_value(value));
    };
    tag("Event", &event);
    tag("Site", site);
    tag("Date", &date);
    tag("Round", "-");
    tag("White", &game.white().display_name());
    tag("Black", &game.black().display_name());
    tag("Result", result);
    tag("GameId", game.id().as_str());
    tag("UTCDate", &date);
    tag("UTCTime", &time);
    tag("TimeControl", &game.time_control().pgn_tag());
    tag("Termination", termination);
    if game.initial_fen() != STARTING_FEN {
        tag("SetUp", "1");
        tag("FEN", game.initial_fen());
    }
    out.push('\n');

    let clocks = matches!(
        game.time_control(),
        TimeControl::Incremental { .. } | TimeControl::MovesInPeriod { .. }
    );
    // Move numbers continue from the starting position's.
    let start_fullmove: u32 = game
        .initial_fen()
        .split_whitespace()
        .nth(5)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let black_first =
        chess_domain::side_to_move(game.initial_fen()) == Some(chess_domain::Color::Black);

    let mut tokens: Vec<String> = Vec::with_capacity(game.moves().len() * 3 + 1);
    let mut after_comment = true;
    for (i, mv) in game.moves().iter().enumerate() {
        let half = i as u32 + u32::from(black_first);
        let number = start_fullmove + half / 2;
        let white_to_move = half.is_multiple_of(2);
        if white_to_move {
            tokens.push(format!("{number}."));
        } else if after_comment {
            tokens.push(format!("{number}..."));
        }
        tokens.push(mv.san.clone());
        after_comment = false;
        if clocks && let Some(clock) = mv.clock_after {
            tokens.push(format!("{{ [%clk {}] }}", clock_text(clock)));
            after_comment = true;
        }
    }
    tokens.push(result.to_owned());

    let mut line = String::new();
    for token in tokens {
        if !line.is_empty() && line.len() + 1 + token.len() > LINE_WIDTH {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&token);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::game::{GameSetup, Participant};
    use chess_domain::RuleSet;
    use shakmaty::Color;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(
            utc_date_time(Timestamp::from_millis(1_795_000_000_999)),
            ("2026.11.18".to_owned(), "11:06:40".to_owned())
        );
        assert_eq!(clock_text(3_723_999), "1:02:03");
    }

    fn reg(id: &str) -> Participant {
        Participant::Registered {
            id: chess_domain::PlayerId::trusted(id),
            username: chess_domain::Username::trusted(id),
        }
    }

    #[test]
    fn timed_game_with_clock_comments() {
        let tc = TimeControl::Incremental {
            initial_secs: 180,
            increment_secs: 2,
        };
        let mut g = Game::new(
            chess_domain::GameId::trusted("abc"),
            GameSetup {
                white: reg("alice"),
                black: reg("bob"),
                time_control: tc,
                rules: RuleSet::Standard,
                rated: true,
                allow_hints: false,
                initial_fen: None,
            },
            Timestamp::from_millis(1_795_000_000_000),
        )
        .unwrap();
        let t0 = Timestamp::from_millis(1_795_000_001_000);
        for (i, m) in ["f3", "e5", "g4", "Qh4#"].iter().enumerate() {
            let side = g.turn();
            g.play(side, m, t0.plus_millis(i as i64 * 10_000)).unwrap();
        }
        let pgn = export(&g, "Rookery");
        assert!(
            pgn.starts_with(
                "[Event \"Rated blitz game\"]\n[Site \"Rookery\"]\n[Date \"2026.11.18\"]\n"
            ),
            "{pgn}"
        );
        assert!(
            pgn.contains("[White \"alice\"]\n[Black \"bob\"]\n[Result \"0-1\"]\n"),
            "{pgn}"
        );
        assert!(
            pgn.contains("[TimeControl \"180+2\"]\n[Termination \"Normal\"]\n\n"),
            "{pgn}"
        );
        assert!(
            pgn.ends_with(
                "1. f3 { [%clk 0:03:00] } 1... e5 { [%clk 0:03:00] } 2. g4 { [%clk 0:02:52] }\n2... Qh4# { [%clk 0:02:52] } 0-1\n"
            ),
            "{pgn}"
        );
        assert_eq!(
            g.ending().unwrap().result.unwrap().winner(),
            Some(Color::Black)
        );
    }

    #[test]
    fn untimed_game_from_a_position() {
        let mut g = Game::new(
            chess_domain::GameId::trusted("x"),
            GameSetup {
                white: Participant::Guest {
                    id: chess_domain::PlayerId::trusted("g"),
                    name: String::new(),
                },
                black: Participant::Engine { level: 3 },
                time_control: TimeControl::Untimed,
                rules: RuleSet::Standard,
                rated: false,
                allow_hints: false,
                initial_fen: Some("4k3/8/8/8/8/8/4P3/4K3 b - - 0 30".into()),
            },
            Timestamp::EPOCH,
        )
        .unwrap();
        g.play(Color::Black, "Kd7", Timestamp::from_millis(1))
            .unwrap();
        g.play(Color::White, "e4", Timestamp::from_millis(2))
            .unwrap();
        let pgn = export(&g, "s");
        assert!(
            pgn.contains("[White \"Guest\"]\n[Black \"Stockfish level 3\"]\n[Result \"*\"]"),
            "{pgn}"
        );
        assert!(
            pgn.contains("[SetUp \"1\"]\n[FEN \"4k3/8/8/8/8/8/4P3/4K3 b - - 0 30\"]"),
            "{pgn}"
        );
        assert!(pgn.ends_with("\n30... Kd7 31. e4 *\n"), "{pgn}");
    }
}
