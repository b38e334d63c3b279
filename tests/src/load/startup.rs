//! `chess-load startup`: the time from starting `chess-stack` to every
//! service SERVING, over several starts.

use super::{
    scenario::{Error, Setup},
    stats::ms,
};

/// Starts `runs` stacks one after the other.
pub async fn run(setup: &Setup, runs: usize) -> Result<(), Error> {
    let mut times = Vec::new();
    for _ in 0..runs {
        let (stack, took) = setup.start_stack().await;
        println!("chess-stack start to every service SERVING: {}", ms(took));
        times.push(took);
        stack.stop().await;
    }
    times.sort_unstable();
    if let Some(median) = times.get(times.len() / 2) {
        println!("median over {runs} runs: {}", ms(*median));
    }
    Ok(())
}
