//! `uqchessserver [--listenOn portno]`: the whole chess system behind one
//! uqchess port, following the protocol contract's command line, messages
//! and exit statuses.
//!
//! Ctrl-C (SIGINT) or SIGTERM stops the services, removes the temporary
//! data directory and then ends the server by that signal, as its default
//! action would. Killed outright, its children see their standard-input
//! pipes close and stop too, and the next server removes the directory left
//! behind.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    process::ExitCode,
};

use tokio::signal::unix::{Signal, SignalKind, signal};

use chess_stack::{ENGINE_UNAVAILABLE, InternalListen, Output, Stack, StackOptions, StartError};

const USAGE: &str = "Usage: ./uqchessserver [--listenOn portno]";
const EXIT_USAGE: u8 = 8;
const EXIT_LISTEN: u8 = 20;
const EXIT_ENGINE: u8 = 4;

/// The `--listenOn` value, or a usage error.
fn parse_args(args: &[String]) -> Result<Option<&str>, ()> {
    match args {
        [] => Ok(None),
        [flag, value] if flag == "--listenOn" && !value.is_empty() => Ok(Some(value)),
        _ => Err(()),
    }
}

fn fail(message: &str, status: u8) -> ExitCode {
    eprintln!("{message}");
    ExitCode::from(status)
}

/// Removes data directories left by earlier servers that are no longer
/// running (they were ended by a signal and could not clean up).
fn remove_stale_data(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("uqchessserver-")) else {
            continue;
        };
        let Some(pid) = rest.split('-').next() else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            // Best effort: another server may be removing it too.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The first of SIGINT and SIGTERM to arrive.
async fn stop_signal(int: &mut Signal, term: &mut Signal) -> i32 {
    tokio::select! {
        _ = int.recv() => signal_hook::consts::SIGINT,
        _ = term.recv() => signal_hook::consts::SIGTERM,
    }
}

/// Ends the process by `signal` with its default action, so whoever started
/// the server sees how it ended (a shell stops a loop on Ctrl-C).
fn die_of(signal: i32) -> ExitCode {
    // If the signal cannot be re-raised, the usual shell status says the same.
    let _ = signal_hook::low_level::emulate_default_handler(signal);
    ExitCode::from(128 + signal as u8)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Ok(listen_on) = parse_args(&args) else {
        return fail(USAGE, EXIT_USAGE);
    };
    let spec = listen_on.unwrap_or("0");
    let cannot_listen = || {
        fail(
            &format!("uqchessserver: can't start listening on port \"{spec}\""),
            EXIT_LISTEN,
        )
    };
    let Some(port) = chess_uqchessclient::connect::port_number(spec) else {
        return cannot_listen();
    };
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return fail("uqchessserver: cannot install signal handlers", 1);
    };
    let tmp = std::env::temp_dir();
    remove_stale_data(&tmp);
    let data = match tempfile::Builder::new()
        .prefix(&format!("uqchessserver-{}-", std::process::id()))
        .tempdir_in(&tmp)
    {
        Ok(dir) => dir,
        Err(e) => {
            return fail(
                &format!("uqchessserver: cannot create a data directory: {e}"),
                1,
            );
        }
    };
    let Some(bin_dir) = chess_stack::own_dir() else {
        return fail(
            "uqchessserver: cannot tell where the service binaries are",
            1,
        );
    };
    let options = StackOptions {
        bin_dir,
        data_dir: PathBuf::from(data.path()),
        grpc_listen: "127.0.0.1:0".to_owned(),
        public_url: None,
        uqchess_listen: format!("0.0.0.0:{port}"),
        // Behind one port by contract: the internal ones are nobody's business.
        internal: InternalListen::free(),
        game_replicas: 1,
        game_database_url: None,
        stockfish_path: None,
        engine_pool_size: None,
        rating_system: None,
        gateway_args: Vec::new(),
        common_args: vec!["--log-filter".into(), "error".into()],
        output: Output::Silent,
        announce_restarts: false,
    };
    let started = tokio::select! {
        started = Stack::start(options) => started,
        signal = stop_signal(&mut int, &mut term) => {
            // Dropping the half-started stack killed its children.
            remove(data);
            return die_of(signal);
        }
    };
    let stack = match started {
        Ok(stack) => stack,
        Err(StartError::ChildExited {
            name: "engine",
            code: Some(ENGINE_UNAVAILABLE),
            ..
        }) => {
            return fail(
                "uqchessserver: cannot start communication with chess engine",
                EXIT_ENGINE,
            );
        }
        Err(
            StartError::Listen { .. }
            | StartError::ChildExited {
                name: "gateway", ..
            },
        ) => {
            return cannot_listen();
        }
        Err(e) => return fail(&format!("uqchessserver: {e}"), 1),
    };
    let port = stack
        .addresses
        .uqchess
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_owned();
    let mut stderr = std::io::stderr();
    // If standard error is gone there is nobody to tell.
    let _ = writeln!(stderr, "{port}");
    let _ = stderr.flush();
    // Serve until stopped; children that die are restarted silently.
    let signal = stop_signal(&mut int, &mut term).await;
    stack.stop().await;
    remove(data);
    die_of(signal)
}

/// Removes the data directory once nothing uses it any more.
fn remove(data: tempfile::TempDir) {
    // Nobody to tell: standard error belongs to the protocol, and the next
    // server removes what is left of a directory whose owner is gone.
    let _ = data.close();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn command_lines() {
        assert_eq!(parse_args(&strings(&[])), Ok(None));
        assert_eq!(parse_args(&strings(&["--listenOn", "0"])), Ok(Some("0")));
        assert_eq!(
            parse_args(&strings(&["--listenOn", "http"])),
            Ok(Some("http"))
        );
        assert!(parse_args(&strings(&["--listenOn"])).is_err());
        assert!(parse_args(&strings(&["--listenOn", ""])).is_err());
        assert!(parse_args(&strings(&["--listenOn", "1", "--listenOn", "2"])).is_err());
        assert!(parse_args(&strings(&["--port", "1"])).is_err());
        assert!(parse_args(&strings(&[""])).is_err());
        assert!(parse_args(&strings(&["1234"])).is_err());
    }
}
