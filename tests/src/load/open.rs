//! `chess-load open`: an open loop, moves arriving at random (a Poisson
//! process per game) at fractions of the front's maximum, itself measured
//! first in the same run by a closed loop of the same games; latency from
//! each move's due time.

use std::time::Duration;

use super::{
    grpc::Pairs,
    scenario::{Error, Front, GRPC_MAX_PLIES, Players, Setup, baselines, phase, report_paced},
    uqchess::{Pace, Window},
};

/// Flags of `chess-load open`.
#[derive(Clone, Debug, clap::Args)]
pub struct OpenArgs {
    /// The front the games are played through.
    #[arg(long, value_enum, default_value_t = Front::Uqchess)]
    pub front: Front,
    /// Games played at once (default: 1000 through uqchess, 200 through
    /// gRPC).
    #[arg(long)]
    pub games: Option<usize>,
    /// Loads, in percent of the measured maximum.
    #[arg(long, value_delimiter = ',', default_values_t = [10, 50, 80])]
    pub loads: Vec<u32>,
    /// Seconds measured at each load.
    #[arg(long, default_value_t = 20)]
    pub duration: u64,
    /// Seconds of the closed loop that measures the maximum.
    #[arg(long, default_value_t = 10)]
    pub probe: u64,
    /// The maximum in moves/s, instead of measuring it.
    #[arg(long)]
    pub max: Option<f64>,
    /// Through gRPC, each player on an HTTP/2 connection of its own, as
    /// clients reaching the gateway directly; by default every player's
    /// calls share one, as behind a proxy that multiplexes them.
    #[arg(long)]
    pub connection_per_player: bool,
}

impl OpenArgs {
    /// What is wrong with these flags together, if anything.
    pub fn usage_error(&self) -> Option<&'static str> {
        (self.connection_per_player && self.front != Front::Grpc)
            .then_some("--connection-per-player is for --front grpc")
    }
}

/// Runs the scenario.
pub async fn run(setup: &Setup, args: &OpenArgs) -> Result<(), Error> {
    let OpenArgs {
        front,
        games,
        ref loads,
        duration,
        probe,
        max,
        connection_per_player,
    } = *args;
    let games = games.unwrap_or(match front {
        Front::Uqchess => 1000,
        Front::Grpc => 200,
    });
    let (_, grpc) = baselines().await?;
    let (stack, _) = setup.start_stack().await;
    let warmup = Duration::from_secs(3);
    // The public API's players sign up once, before any phase.
    let players = match front {
        Front::Uqchess => Players::Uqchess,
        Front::Grpc => {
            Players::Grpc(Pairs::sign_up(&stack.gateway, games, connection_per_player).await?)
        }
    };
    let max_plies = match front {
        Front::Uqchess => 100_000,
        Front::Grpc => GRPC_MAX_PLIES,
    };
    let connections = match front {
        Front::Grpc if connection_per_player => " (a connection per player)",
        Front::Grpc => " (one connection)",
        Front::Uqchess => "",
    };
    println!(
        "scenario: open loop, {games} games through {front:?}{connections}, {duration} s at each load"
    );
    let max = match max {
        Some(max) => max,
        None => {
            let window = Window::new(warmup, Duration::from_secs(probe));
            let pace = Pace::closed(max_plies, Duration::ZERO);
            let played = phase(&stack, &players, games, window, pace).await?;
            let max = played.figures.moves as f64 / played.seconds;
            println!("maximum (closed loop, {probe} s): {max:.0} moves/s");
            report_paced(&played.figures, &played.cpu, grpc);
            max
        }
    };
    for &load in loads {
        let rate = max * f64::from(load) / 100.0;
        let window = Window::new(warmup, Duration::from_secs(duration));
        let pace = Pace {
            max_plies,
            think: Duration::ZERO,
            rate: Some(rate / games as f64),
        };
        let played = phase(&stack, &players, games, window, pace).await?;
        println!(
            "load {load}% = {rate:.0} moves/s offered: {:.0} moves/s answered",
            played.figures.moves as f64 / played.seconds
        );
        report_paced(&played.figures, &played.cpu, grpc);
    }
    stack.stop().await;
    Ok(())
}
