//! `chess-stack`: the whole system on one machine, in one command. Its
//! flags are [`chess_stack::Config`]; [`chess_stack::run`] does the rest.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    chess_stack::run(chess_runtime::cli::parse("stack")).await
}
