//! `uqchessclient`: plays chess over the uqchess line protocol from a terminal.

use std::process::ExitCode;

fn main() -> ExitCode {
    chess_uqchessclient::run(std::env::args_os().skip(1))
}
