//! The rules of a game as [`Game`] plays them: moves, clocks, endings,
//! draws, restoring from storage and catching a watcher up. One concept,
//! as `game.rs` is, in one file.

use super::*;

const W: Color = Color::White;
const B: Color = Color::Black;

/// The instant `ms` after the epoch.
fn at(ms: Millis) -> Timestamp {
    Timestamp::from_millis(ms)
}

fn guest(id: &str) -> Participant {
    Participant::Guest {
        id: chess_domain::PlayerId::trusted(id),
        name: id.to_owned(),
    }
}

/// `g` (a standard game between guests w and b) rebuilt from what the
/// store keeps of it.
fn reloaded(g: &Game) -> Game {
    Game::restore(
        g.id().to_owned(),
        GameSetup {
            white: guest("w"),
            black: guest("b"),
            time_control: g.time_control(),
            rules: RuleSet::Standard,
            rated: false,
            allow_hints: false,
            initial_fen: None,
        },
        g.created_at(),
        g.moves().to_vec(),
        g.credits().to_vec(),
        g.draw_offer(),
        g.ending(),
    )
    .unwrap()
}

/// An untimed standard game between guests from `fen`.
fn from_fen(fen: &str) -> Game {
    game_with(RuleSet::Standard, TimeControl::Untimed, Some(fen))
}

/// `side` playing `input` at `at` in `g` is refused as illegal.
fn assert_illegal(g: &mut Game, side: Color, input: &str, now: Timestamp) {
    let refused = g.play(side, input, now);
    assert!(
        matches!(refused, Err(GameError::Illegal { .. })),
        "{input}: {refused:?}"
    );
}

fn game_with(rules: RuleSet, tc: TimeControl, fen: Option<&str>) -> Game {
    Game::new(
        GameId::trusted("g1"),
        GameSetup {
            white: guest("w"),
            black: guest("b"),
            time_control: tc,
            rules,
            rated: false,
            allow_hints: false,
            initial_fen: fen.map(str::to_owned),
        },
        Timestamp::EPOCH,
    )
    .unwrap()
}

/// A new game "x" of `setup`, created at the epoch.
fn new_game(setup: GameSetup) -> Result<Game, SetupError> {
    Game::new(GameId::trusted("x"), setup, Timestamp::EPOCH)
}

/// `initial_secs` a side, and `increment_secs` more a move.
fn incremental(initial_secs: u32, increment_secs: u32) -> TimeControl {
    TimeControl::Incremental {
        initial_secs,
        increment_secs,
    }
}

fn standard() -> Game {
    game_with(RuleSet::Standard, TimeControl::Untimed, None)
}

fn play_all(g: &mut Game, moves: &[&str]) -> Vec<Event> {
    let mut all = Vec::new();
    for (i, m) in moves.iter().enumerate() {
        let side = g.turn();
        all.extend(
            g.play(side, m, at(i as Millis))
                .unwrap_or_else(|e| panic!("{m}: {e}")),
        );
    }
    all
}

#[test]
fn log_lines_say_who_plays_what_and_how_it_ended() {
    let mut g = Game::new(
        GameId::trusted("g1"),
        GameSetup {
            white: Participant::Registered {
                id: chess_domain::PlayerId::trusted("p1"),
                username: chess_domain::Username::trusted("alice"),
            },
            black: Participant::Registered {
                id: chess_domain::PlayerId::trusted("p2"),
                username: chess_domain::Username::trusted("bob"),
            },
            time_control: incremental(300, 3),
            rules: RuleSet::Standard,
            rated: true,
            initial_fen: None,
            allow_hints: false,
        },
        Timestamp::EPOCH,
    )
    .unwrap();
    assert_eq!(
        g.started_line(),
        "started: alice (white) vs bob (black), 5+3 blitz, rated"
    );
    assert_eq!(g.finished_line(), None);
    let mut fools = standard();
    assert_eq!(
        fools.started_line(),
        "started: w (white) vs b (black), untimed, unrated"
    );
    play_all(&mut fools, &["f3", "e5", "g4", "Qh4#"]);
    assert_eq!(
        fools.finished_line().unwrap(),
        "finished: 0-1 by checkmate after 2 moves"
    );
    g.resign(W, at(10)).unwrap();
    assert_eq!(
        g.finished_line().unwrap(),
        "finished: 0-1 by resignation after 0 moves"
    );
}

fn ending(g: &Game) -> (Option<GameResult>, Termination) {
    let e = g.ending().expect("game over");
    (e.result, e.termination)
}

/// Asserts that `g` ended drawn by `termination`.
fn assert_drawn(g: &Game, termination: Termination) {
    assert_eq!(ending(g), (Some(GameResult::Draw), termination));
}

#[test]
fn fools_mate() {
    let mut g = standard();
    let events = play_all(&mut g, &["f2f3", "e7e5", "g2g4", "d8h4"]);
    assert_eq!(
        ending(&g),
        (Some(GameResult::BlackWins), Termination::Checkmate)
    );
    assert!(matches!(events.last(), Some(Event::GameEnded(_))));
    assert_eq!(g.moves()[3].san, "Qh4#");
    assert_eq!(g.play(W, "e2e4", at(9)), Err(GameError::GameOver));
}

#[test]
fn stalemate_and_insufficient_material_draw() {
    for (fen, white_moves, drawn) in [
        // The classic K+Q stalemate.
        (
            "k7/8/1K6/8/8/8/8/2Q5 w - - 0 1",
            "c1c7",
            Termination::Stalemate,
        ),
        (
            "4k3/8/8/8/8/8/4n3/4K3 w - - 0 1",
            "Kxe2",
            Termination::InsufficientMaterial,
        ),
    ] {
        let mut g = from_fen(fen);
        g.play(W, white_moves, at(1)).unwrap();
        assert_drawn(&g, drawn);
    }
}

#[test]
fn check_is_reported_but_mate_is_not_check() {
    let mut g = standard();
    let events = play_all(&mut g, &["e2e4", "f7f6", "d1h5"]);
    assert!(matches!(
        events.last(),
        Some(Event::MoveMade { check: true, .. })
    ));
    assert_eq!(g.moves()[2].san, "Qh5+");
}

#[test]
fn turn_and_membership_are_enforced() {
    let mut g = standard();
    assert_eq!(g.play(B, "e7e5", at(0)), Err(GameError::NotYourTurn));
    assert_eq!(g.side_of(&PlayerId::trusted("w")), Some(W));
    assert_eq!(g.side_of(&PlayerId::trusted("nobody")), None);
    assert_eq!(g.ply(), 0);
}

#[test]
fn moves_in_uci_and_san() {
    let mut g = standard();
    play_all(&mut g, &["e4", "e7e5", "Nf3", "Nc6", "Bb5", "a6", "O-O"]);
    assert_eq!(g.moves()[6].uci, "e1g1");
    assert_eq!(g.moves()[6].san, "O-O");
    assert!(matches!(
        g.play(B, "Zz9", at(9)),
        Err(GameError::Malformed(_))
    ));
    assert_illegal(&mut g, B, "e5e4", at(9));
    assert_illegal(&mut g, B, "Qd4", at(9));
    assert_eq!(g.ply(), 7);
}

#[test]
fn uqchess_takes_uci_only_with_either_case_promotion() {
    let mut g = game_with(
        RuleSet::Uqchess,
        TimeControl::Untimed,
        Some("8/1P6/8/8/8/8/6k1/K7 w - - 0 1"),
    );
    assert!(matches!(
        g.play(W, "b8=Q", at(1)),
        Err(GameError::UciOnly(_))
    ));
    let events = g.play(W, "b7b8N", at(1)).unwrap();
    match &events[0] {
        Event::MoveMade { mv, .. } => {
            assert_eq!(mv.uci, "b7b8n");
            assert_eq!(mv.submitted, "b7b8N");
            assert_eq!(mv.san, "b8=N");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn castling_through_check_is_illegal() {
    // The black bishop on c4 covers f1.
    let mut g = from_fen("4k3/8/8/8/2b5/8/8/4K2R w K - 0 1");
    assert_illegal(&mut g, W, "e1g1", at(1));
    assert_illegal(&mut g, W, "O-O", at(1));
}

#[test]
fn en_passant_and_under_promotion() {
    let mut g = from_fen("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 1");
    g.play(W, "e5d6", at(1)).unwrap();
    assert_eq!(g.moves()[0].san, "exd6");
    let mut g = from_fen("8/2P1k3/8/8/8/8/8/4K3 w - - 0 1");
    g.play(W, "c8=R", at(1)).unwrap();
    assert_eq!(g.moves()[0].uci, "c7c8r");
}

#[test]
fn san_ambiguity_needs_disambiguation() {
    // Knights on b1 and f1 both reach d2.
    let mut g = from_fen("4k3/8/8/8/8/8/8/1N2KN2 w - - 0 1");
    assert_illegal(&mut g, W, "Nd2", at(1));
    g.play(W, "Nbd2", at(1)).unwrap();
    assert_eq!(g.moves()[0].san, "Nbd2");
}

#[test]
fn fifty_move_rule_warns_then_draws() {
    let mut g = from_fen("4k3/8/8/8/8/8/R7/4K3 w - - 78 60");
    let events = play_all(&mut g, &["a2a3", "e8d8"]);
    assert!(events.iter().any(|e| matches!(
        e,
        Event::FiftyMoveWarning {
            moves_remaining: 10
        }
    )));
    let mut shuffle = Vec::new();
    for _ in 0..5 {
        shuffle.extend(["a3a4", "d8e8", "a4a3", "e8d8"]);
    }
    // 80 half-moves so far; 20 more reach 100.
    let shuffle = &shuffle[..20];
    let events = play_all(&mut g, shuffle);
    assert_drawn(&g, Termination::FiftyMoveRule);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::FiftyMoveWarning { .. }))
            .count(),
        0
    );
}

#[test]
fn uqchess_ignores_the_fifty_move_rule_and_material() {
    let mut g = game_with(
        RuleSet::Uqchess,
        TimeControl::Untimed,
        Some("4k3/8/8/8/8/8/4n3/4K3 w - - 99 60"),
    );
    g.play(W, "e1e2", at(1)).unwrap();
    assert!(g.is_active());
    assert_eq!(g.offer_draw(B, at(2)), Err(GameError::NoDrawsInRuleSet));
}

#[test]
fn threefold_repetition_is_claimed() {
    let mut g = standard();
    assert_eq!(g.claim_draw(W, at(0)), Err(GameError::NoRepetition));
    play_all(&mut g, &["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1"]);
    assert_eq!(g.claim_draw(B, at(9)), Err(GameError::NoRepetition));
    play_all(&mut g, &["Ng8"]);
    assert_eq!(g.repetitions(), 3);
    g.claim_draw(W, at(10)).unwrap();
    assert_drawn(&g, Termination::ThreefoldRepetition);
}

#[test]
fn draw_offers() {
    let mut g = standard();
    assert_eq!(g.accept_draw(B, at(0)), Err(GameError::NoDrawOffer));
    assert_eq!(
        g.offer_draw(W, at(0)).unwrap(),
        vec![Event::DrawOffered { by: W }]
    );
    g.decline_draw(B).unwrap();
    assert_eq!(g.draw_offer(), None);
    g.offer_draw(W, at(0)).unwrap();
    // White moves; white's own offer stands.
    g.play(W, "e4", at(1)).unwrap();
    assert_eq!(g.draw_offer(), Some(W));
    // Black moves instead of accepting: declined.
    let events = g.play(B, "e5", at(2)).unwrap();
    assert_eq!(events[0], Event::DrawDeclined { by: B });
    g.offer_draw(W, at(3)).unwrap();
    g.accept_draw(B, at(4)).unwrap();
    assert_drawn(&g, Termination::DrawAgreement);
}

#[test]
fn abort_only_before_both_moved() {
    let mut g = standard();
    play_all(&mut g, &["e4"]);
    g.abort(B, at(1)).unwrap();
    assert_eq!(ending(&g), (None, Termination::Aborted));
    let mut g = standard();
    play_all(&mut g, &["e4", "e5"]);
    assert_eq!(g.abort(W, at(3)), Err(GameError::TooLateToAbort));
}

#[test]
fn flag_falls_by_deadline_and_insufficient_material_draws() {
    let mut g = game_with(RuleSet::Standard, incremental(60, 0), None);
    assert_eq!(g.next_deadline(), Some(at(60_000))); // first-move window
    g.play(W, "e4", at(1_000)).unwrap();
    g.play(B, "e5", at(2_000)).unwrap();
    assert_eq!(g.next_deadline(), Some(at(62_000)));
    assert!(g.check_deadline(at(61_999)).is_empty());
    let events = g.check_deadline(at(62_000));
    assert_eq!(
        events,
        vec![Event::GameEnded(Ending {
            result: Some(GameResult::BlackWins),
            termination: Termination::Timeout,
            at: at(62_000)
        })]
    );
    // Black has only a king: white's flag is a draw.
    let mut g = game_with(
        RuleSet::Standard,
        incremental(60, 0),
        Some("4k3/8/8/8/8/8/PPPP4/4K3 w - - 0 1"),
    );
    g.play(W, "a3", at(0)).unwrap();
    g.play(B, "Kd7", at(0)).unwrap();
    g.check_deadline(at(60_000));
    assert_drawn(&g, Termination::TimeoutVsInsufficientMaterial);
}

#[test]
fn missing_first_move_aborts() {
    let mut g = game_with(
        RuleSet::Standard,
        TimeControl::Daily { turn_hours: 24 },
        None,
    );
    assert_eq!(g.next_deadline(), Some(at(24 * 3_600_000)));
    g.check_deadline(at(24 * 3_600_000));
    assert_eq!(ending(&g), (None, Termination::Aborted));
}

#[test]
fn a_move_after_the_flag_loses() {
    let mut g = game_with(RuleSet::Standard, incremental(10, 0), None);
    play_all(&mut g, &["e4", "e5"]);
    let events = g.play(W, "Nf3", at(20_000)).unwrap();
    assert!(matches!(
        events[..],
        [Event::GameEnded(Ending {
            termination: Termination::Timeout,
            ..
        })]
    ));
    assert_eq!(g.ply(), 2);
}

#[test]
fn restore_replays_moves_and_clocks() {
    let mut g = game_with(RuleSet::Standard, incremental(60, 1), None);
    g.play(W, "e4", at(100)).unwrap();
    g.play(B, "e5", at(2_000)).unwrap();
    g.play(W, "Nf3", at(7_000)).unwrap();
    g.offer_draw(W, at(7_500)).unwrap();
    let restored = reloaded(&g);
    assert_eq!(restored.fen(), g.fen());
    assert_eq!(restored.clock(at(9_000)), g.clock(at(9_000)));
    assert_eq!(restored.next_deadline(), g.next_deadline());
    assert_eq!(restored.moves(), g.moves());
    assert_eq!(restored.draw_offer(), Some(W));
}

/// Time a game spent without a replica is given back to the side to
/// move, live and after a reload, in every turn it happened.
#[test]
fn ownerless_time_is_given_back_and_survives_a_reload() {
    let mut g = game_with(RuleSet::Standard, incremental(60, 0), None);
    // Before the first move: the first-move window moves.
    assert_eq!(g.next_deadline(), Some(at(60_000)));
    let credit = g.credit_ownerless(at(1_000), at(4_000)).unwrap();
    assert_eq!((credit.ply, credit.ms), (0, 3_000));
    assert_eq!(g.next_deadline(), Some(at(63_000)));
    g.play(W, "e4", at(5_000)).unwrap();
    g.play(B, "e5", at(6_000)).unwrap();
    assert_eq!(g.next_deadline(), Some(at(66_000)));
    // The shard's last live moment was before the last move: the time
    // since the move is given back, not more.
    let credit = g.credit_ownerless(at(2_000), at(10_000)).unwrap();
    assert_eq!((credit.ply, credit.ms), (2, 4_000));
    assert_eq!(g.next_deadline(), Some(at(70_000)));
    // A second outage in the same turn counts from the first credit.
    let credit = g.credit_ownerless(at(0), at(11_000)).unwrap();
    assert_eq!((credit.ply, credit.ms), (2, 1_000));
    assert_eq!(g.clock(at(11_000)).remaining.white, 60_000);
    g.play(W, "Nf3", at(20_000)).unwrap();
    assert_eq!(g.clock(at(20_000)).remaining.white, 51_000);
    // Nothing is owed when the shard was served since the last move.
    assert_eq!(g.credit_ownerless(at(21_000), at(21_000)), None);
    let restored = reloaded(&g);
    assert_eq!(restored.clock(at(30_000)), g.clock(at(30_000)));
    assert_eq!(restored.next_deadline(), g.next_deadline());
    assert_eq!(restored.credits(), g.credits());
    // Untimed games have no clock to give time back to.
    let mut untimed = game_with(RuleSet::Standard, TimeControl::Untimed, None);
    assert_eq!(untimed.credit_ownerless(at(0), at(10_000)), None);
}

#[test]
fn a_retried_move_is_answered_again_not_played_again() {
    let mut g = standard();
    assert_eq!(g.check_ply(W, "e4", 1), Ok(None));
    let first = g.play(W, "e4", at(0)).unwrap();
    // The same move for the same ply, however it is written.
    for input in ["e4", "e2e4"] {
        assert_eq!(g.check_ply(W, input, 1), Ok(Some(first.clone())));
    }
    assert_eq!(g.ply(), 1);
    // Another move for a ply that is taken, or the other side's, or a
    // ply ahead: the sender's view is stale.
    let stale = |ply| GameError::StalePly { ply, played: 1 };
    assert_eq!(g.check_ply(W, "d4", 1), Err(stale(1)));
    assert_eq!(g.check_ply(B, "e4", 1), Err(stale(1)));
    assert_eq!(g.check_ply(W, "d4", 3), Err(stale(3)));
    assert_eq!(g.check_ply(W, "e4", 0), Err(stale(0)));
    assert_eq!(g.check_ply(B, "e5", 2), Ok(None));
}

#[test]
fn a_retried_mate_comes_back_with_the_ending() {
    let mut g = standard();
    play_all(&mut g, &["f3", "e5", "g4"]);
    let mate = g.play(B, "Qh4#", at(0)).unwrap();
    assert!(matches!(mate.last(), Some(Event::GameEnded(_))));
    assert_eq!(g.check_ply(B, "Qh4", 4), Ok(Some(mate)));
}

#[test]
fn moves_after_replays_what_was_published() {
    let mut g = standard();
    let published = play_all(&mut g, &["e4", "f6", "Qh5+", "g6"]);
    let moves: Vec<Event> = published
        .into_iter()
        .filter(|e| matches!(e, Event::MoveMade { .. }))
        .collect();
    assert_eq!(g.moves_after(0), moves);
    assert_eq!(g.moves_after(2), moves[2..].to_vec());
    assert!(g.moves_after(4).is_empty());
}

#[test]
fn catching_up_repeats_nothing_the_watcher_has() {
    let mut g = standard();
    let published = play_all(&mut g, &["e4", "e5", "Nf3"]);
    let offer = g.offer_draw(B, at(0)).unwrap();
    // Every ply was seen: only the standing offer, which has no ply of
    // its own, is told again.
    assert_eq!(g.catch_up(3), Some(offer.clone()));
    let mut missed = published[1..].to_vec();
    missed.extend(offer.clone());
    assert_eq!(g.catch_up(1), Some(missed));
    let ended = g.resign(W, at(0)).unwrap();
    let mut missed = published[2..].to_vec();
    missed.extend(ended);
    assert_eq!(g.catch_up(2), Some(missed));
    assert_eq!(g.catch_up(4), None);
}

#[test]
fn setups_are_checked() {
    let setup = |white, black, rated, fen: Option<&str>| GameSetup {
        white,
        black,
        time_control: TimeControl::Untimed,
        rules: RuleSet::Standard,
        rated,
        allow_hints: false,
        initial_fen: fen.map(str::to_owned),
    };
    let e = Participant::Engine { level: 3 };
    assert_eq!(
        new_game(setup(e.clone(), e.clone(), false, None)).unwrap_err(),
        SetupError::EngineVsEngine
    );
    assert_eq!(
        new_game(setup(guest("a"), guest("a"), false, None)).unwrap_err(),
        SetupError::SamePlayer
    );
    assert_eq!(
        new_game(setup(guest("a"), guest("b"), true, None)).unwrap_err(),
        SetupError::RatedNeedsRegistered
    );
    assert!(matches!(
        new_game(setup(guest("a"), guest("b"), false, Some("nonsense"))),
        Err(SetupError::Fen(_))
    ));
    // Two white kings.
    assert!(matches!(
        new_game(setup(
            guest("a"),
            guest("b"),
            false,
            Some("K6K/8/8/8/8/8/8/k7 w - - 0 1")
        )),
        Err(SetupError::Fen(_))
    ));
}

fn registered(id: &str) -> Participant {
    Participant::Registered {
        id: chess_domain::PlayerId::trusted(id),
        username: chess_domain::Username::trusted(id),
    }
}

#[test]
fn untimed_games_are_not_rated_and_rated_games_have_no_hints() {
    let blitz = incremental(300, 0);
    let setup = |time_control, rated, allow_hints| GameSetup {
        white: registered("a"),
        black: registered("b"),
        time_control,
        rules: RuleSet::Standard,
        rated,
        allow_hints,
        initial_fen: None,
    };
    assert_eq!(
        new_game(setup(TimeControl::Untimed, true, false)).unwrap_err(),
        SetupError::RatedUntimed
    );
    assert_eq!(
        new_game(setup(blitz, true, true)).unwrap_err(),
        SetupError::HintsInRatedGame
    );
    assert!(new_game(setup(blitz, true, false)).unwrap().rated());
    // A stored game keeps what it was created with.
    let old = Game::restore(
        GameId::trusted("x"),
        setup(TimeControl::Untimed, true, false),
        Timestamp::EPOCH,
        Vec::new(),
        Vec::new(),
        None,
        None,
    )
    .unwrap();
    assert!(old.rated() && !old.hints_allowed());
}

#[test]
fn who_may_have_hints() {
    let setup = |white, black, rules, allow_hints| GameSetup {
        white,
        black,
        time_control: TimeControl::Untimed,
        rules,
        rated: false,
        allow_hints,
        initial_fen: None,
    };
    let engine = Participant::Engine { level: 3 };
    let new = |s| new_game(s).unwrap().hints_allowed();
    // Two people: only if they agreed.
    assert!(!new(setup(
        guest("a"),
        guest("b"),
        RuleSet::Standard,
        false
    )));
    assert!(new(setup(guest("a"), guest("b"), RuleSet::Standard, true)));
    // The computer, either side, and uqchess games: always.
    assert!(new(setup(
        guest("a"),
        engine.clone(),
        RuleSet::Standard,
        false
    )));
    assert!(new(setup(engine, guest("b"), RuleSet::Standard, false)));
    assert!(new(setup(guest("a"), guest("b"), RuleSet::Uqchess, false)));
}
