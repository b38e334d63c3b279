//! Closed loops: each game's next move is sent as soon as the last is
//! answered. `moves` plays through the uqchess front, `grpc` through the
//! public API, `latency` one game at a time for the uncontended latency.

use std::time::{Duration, Instant};

use super::{
    grpc::Pairs,
    scenario::{
        Error, GRPC_MAX_PLIES, Players, Setup, baselines, phase, print_usage, report_games,
    },
    stats::{Samples, ms},
    uqchess::{self, Pace, Window},
};

/// Flags of `chess-load moves`.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct MovesArgs {
    /// Games played at once.
    #[arg(long, default_value_t = 1000)]
    pub games: usize,
    /// Seconds measured.
    #[arg(long, default_value_t = 60)]
    pub duration: u64,
    /// Seconds played before measuring.
    #[arg(long, default_value_t = 5)]
    pub warmup: u64,
    /// Clients asking for engine hints meanwhile.
    #[arg(long, default_value_t = 0)]
    pub hint_clients: usize,
    /// Plies after which a game is resigned and replaced (games are
    /// otherwise kept going: random moves avoid ending them).
    #[arg(long, default_value_t = 100_000)]
    pub max_plies: u32,
}

/// Flags of `chess-load grpc`.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct GrpcArgs {
    /// Games played at once.
    #[arg(long, default_value_t = 100)]
    pub games: usize,
    /// Seconds measured.
    #[arg(long, default_value_t = 30)]
    pub duration: u64,
    /// Seconds of play before measuring (the players register and sign
    /// in before that).
    #[arg(long, default_value_t = 5)]
    pub warmup: u64,
    /// Each player on an HTTP/2 connection of its own, as clients
    /// reaching the gateway directly; by default every player's calls
    /// share one, as behind a proxy that multiplexes them.
    #[arg(long)]
    pub connection_per_player: bool,
}

/// Concurrent games through uqchess, with hint clients if asked for.
pub async fn moves(setup: &Setup, args: &MovesArgs) -> Result<(), Error> {
    let MovesArgs {
        games,
        duration,
        warmup,
        hint_clients,
        max_plies,
    } = *args;
    let (tcp, grpc) = baselines().await?;
    let (stack, startup) = setup.start_stack().await;
    println!("chess-stack ready in {}", ms(startup));
    let port = stack.uqchess_port();
    let window = Window::new(Duration::from_secs(warmup), Duration::from_secs(duration));
    let hints = (hint_clients > 0)
        .then(|| tokio::spawn(uqchess::hints(port, hint_clients, window.clone())));
    let played = phase(
        &stack,
        &Players::Uqchess,
        games,
        window,
        Pace::closed(max_plies, Duration::ZERO),
    )
    .await?;
    println!(
        "scenario: {games} games through uqchess, {hint_clients} hint clients, {duration} s measured after {warmup} s"
    );
    report_games(&played.figures, played.seconds, tcp, grpc);
    if let Some(hints) = hints {
        let samples: Samples = hints.await??;
        if let Some(s) = samples.summary() {
            println!(
                "  engine hint (send -> moves) {}",
                s.line(Some(("tonic unary", grpc)))
            );
        }
    }
    print_usage(
        "processes (during the measured window):",
        &played.usage,
        &played.cpu,
        played.seconds,
    );
    let status = stack.stop().await;
    println!("chess-stack stopped: {status}");
    Ok(())
}

/// Concurrent games between registered players through the public API.
pub async fn grpc(setup: &Setup, args: &GrpcArgs) -> Result<(), Error> {
    let GrpcArgs {
        games,
        duration,
        warmup,
        connection_per_player,
    } = *args;
    let (tcp, grpc) = baselines().await?;
    let (stack, _) = setup.start_stack().await;
    let pairs = Pairs::sign_up(&stack.gateway, games, connection_per_player).await?;
    let window = Window::new(Duration::from_secs(warmup), Duration::from_secs(duration));
    let played = phase(
        &stack,
        &Players::Grpc(pairs),
        games,
        window,
        Pace::closed(GRPC_MAX_PLIES, Duration::ZERO),
    )
    .await?;
    let connections = if connection_per_player {
        "a connection per player"
    } else {
        "one connection"
    };
    println!(
        "scenario: {games} games through the public gRPC API ({connections}), {duration} s measured after {warmup} s"
    );
    report_games(&played.figures, played.seconds, tcp, grpc);
    print_usage(
        "processes (during the measured window):",
        &played.usage,
        &played.cpu,
        played.seconds,
    );
    stack.stop().await;
    Ok(())
}

/// One game at a time through uqchess, until about `moves` moves are in.
pub async fn latency(setup: &Setup, moves: usize) -> Result<(), Error> {
    let (tcp, grpc) = baselines().await?;
    let (stack, _) = setup.start_stack().await;
    // A long window, stopped once enough moves are in.
    let window = Window::new(Duration::from_secs(1), Duration::from_secs(3600));
    let port = stack.uqchess_port();
    let game = tokio::spawn(uqchess::games(
        port,
        1,
        window.clone(),
        Pace::closed(200, Duration::ZERO),
    ));
    let started = Instant::now();
    let expected = Duration::from_secs(1) + Duration::from_millis(5 * moves as u64);
    tokio::time::sleep(expected).await;
    window.stop();
    let figures = game.await?;
    println!("scenario: one game at a time, uncontended");
    report_games(
        &figures,
        (started.elapsed() - Duration::from_secs(1)).as_secs_f64(),
        tcp,
        grpc,
    );
    stack.stop().await;
    Ok(())
}
