//! `chess-load hints`: the engine pool's rate of hints against bare
//! Stockfish measured just before and after, then human moves with and
//! without the pool saturated by hints, in phases alternated against the
//! same system.

use std::time::Duration;

use super::{
    engine,
    scenario::{Error, Setup, at_least_one, baselines},
    stats::Samples,
    uqchess::{self, Pace, Window},
};

/// Flags of `chess-load hints`.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct HintsArgs {
    /// Games played at once.
    #[arg(long, default_value_t = 50)]
    pub games: usize,
    /// Seconds measured in each round and each phase.
    #[arg(long, default_value_t = 20)]
    pub duration: u64,
    /// Clients asking for engine hints in the saturated phase.
    #[arg(long, default_value_t = 8)]
    pub hint_clients: usize,
    /// Each player's thinking time before a move, in milliseconds (0:
    /// the games play as fast as the system answers, using every core).
    #[arg(long, default_value_t = 0)]
    pub think_ms: u64,
    /// Rounds of the pool with hint clients alone, each `duration` long
    /// and each compared with one bare Stockfish measured just before
    /// and just after it (the machine's speed drifts).
    #[arg(long, default_value_t = 3, value_parser = at_least_one)]
    pub rounds: usize,
    /// Pairs of human phases, one without hint clients and one with,
    /// alternated; each side's moves are pooled, so its p99 rests on
    /// this many times more of them than one phase has.
    #[arg(long, default_value_t = 3, value_parser = at_least_one)]
    pub pairs: usize,
}

/// Runs the scenario.
pub async fn run(setup: &Setup, args: &HintsArgs) -> Result<(), Error> {
    let HintsArgs {
        games,
        duration,
        hint_clients,
        think_ms,
        rounds,
        pairs,
    } = *args;
    let think = Duration::from_millis(think_ms);
    let (_, grpc) = baselines().await?;
    let pool = engine::service_defaults();
    let processes = setup
        .stack_arg
        .iter()
        .find_map(|a| a.strip_prefix("--engine-pool-size="))
        .map_or(Ok(pool.size), str::parse)?;
    let seconds = Duration::from_secs(duration);
    println!(
        "the search of a hint: {}; Stockfish with {} thread, {} MiB hash; pool of {processes}",
        engine::hint_search().go,
        pool.threads,
        pool.hash_mb
    );
    let bare = engine::bare_stockfish(1, seconds).await?;
    let together = engine::bare_stockfish(processes, seconds).await?;
    println!(
        "bare Stockfish: one alone {bare:.2} searches/s (x {processes} = {:.2}); \
         {processes} at once {together:.2}/s = {:.1} % of that",
        bare * processes as f64,
        100.0 * together / (bare * processes as f64)
    );
    let (stack, _) = setup.start_stack().await;
    let port = stack.uqchess_port();
    // The pool at its limit with nothing else to do, each time against one
    // bare process measured just before and just after (the machine's speed
    // drifts by tens of per cent within minutes).
    let mut ratios = Vec::with_capacity(rounds);
    let mut before = bare;
    for round in 0..rounds {
        let window = Window::new(Duration::from_secs(3), seconds);
        let alone = uqchess::hints(port, hint_clients, window).await?;
        let Some(s) = alone.summary() else {
            return Err("no hint was answered".into());
        };
        let after = engine::bare_stockfish(1, seconds).await?;
        let rate = s.count as f64 / duration as f64;
        let ratio = rate / (processes as f64 * (before + after) / 2.0);
        println!(
            "round {}: bare {before:.2} then {after:.2} searches/s; {hint_clients} hint clients alone {rate:.2} hints/s \
             = {:.1} % of {processes} x bare; hint {}",
            round + 1,
            100.0 * ratio,
            s.line(None)
        );
        ratios.push(ratio);
        before = after;
    }
    let bare = before;
    ratios.sort_by(f64::total_cmp);
    println!(
        "hints/s with {hint_clients} clients / ({processes} x one bare Stockfish): median {:.1} % over {rounds} rounds (lowest {:.1} %)",
        100.0 * ratios[ratios.len() / 2],
        100.0 * ratios[0]
    );
    // Human moves without hint clients and with them, a pair of phases at
    // a time (the machine drifts between pairs), each side's moves pooled:
    // one phase's p99 is its few dozen slowest moves and swings from phase
    // to phase.
    let mut pooled = [Samples::default(), Samples::default()];
    let mut pair_ratios = Vec::with_capacity(pairs);
    for pair in 1..=pairs {
        let mut p99 = [None; 2];
        for (side, clients) in [0, hint_clients].into_iter().enumerate() {
            let window = Window::new(Duration::from_secs(3), Duration::from_secs(duration));
            let hints =
                (clients > 0).then(|| tokio::spawn(uqchess::hints(port, clients, window.clone())));
            let figures =
                uqchess::games(port, games, window.clone(), Pace::closed(200, think)).await;
            println!(
                "pair {pair}: {games} games ({} ms thinking a move), {clients} hint clients: {:.0} moves/s",
                think.as_millis(),
                figures.moves as f64 / duration as f64
            );
            if let Some(s) = figures.move_latency.summary() {
                println!(
                    "  move (send -> ok)          {}",
                    s.line(Some(("tonic unary", grpc)))
                );
                p99[side] = Some(s.p99);
            }
            pooled[side].merge(figures.move_latency);
            if let Some(hints) = hints
                && let Some(s) = hints.await??.summary()
            {
                let rate = s.count as f64 / duration as f64;
                println!(
                    "  engine hint (send -> moves) {}; {rate:.2} hints/s = {:.1} % of {processes} x bare",
                    s.line(None),
                    100.0 * rate / (bare * processes as f64)
                );
            }
        }
        if let [Some(without), Some(with)] = p99 {
            let ratio = with.as_secs_f64() / without.as_secs_f64();
            println!("pair {pair}: human-move p99 with / without = {ratio:.2}");
            pair_ratios.push(ratio);
        }
    }
    let [without, with] = pooled.map(|side| side.summary());
    if let (Some(without), Some(with)) = (without, with) {
        println!("human moves, the {pairs} phases of each side pooled:");
        println!(
            "  without hint clients       {}",
            without.line(Some(("tonic unary", grpc)))
        );
        println!(
            "  with {hint_clients} hint clients        {}",
            with.line(Some(("tonic unary", grpc)))
        );
        pair_ratios.sort_by(f64::total_cmp);
        let pairs_range = match (pair_ratios.first(), pair_ratios.last()) {
            (Some(low), Some(high)) => format!("; pair by pair {low:.2} to {high:.2}"),
            _ => String::new(),
        };
        println!(
            "human-move p99 with the engine saturated / without = {:.2} (pooled{pairs_range})",
            with.p99.as_secs_f64() / without.p99.as_secs_f64()
        );
    }
    stack.stop().await;
    Ok(())
}
