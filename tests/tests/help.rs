//! `--help` of every binary shows each flag's default and each enumerated
//! flag's values, so a newcomer never has to read the source for them.

/// Flags that have no default on purpose: unset means "not used".
const OPTIONAL: [&str; 7] = [
    "--listen-fd",
    "--unix-listen",
    "--unix-listen-fd",
    "--uqchess-listen-fd",
    "--token-key-file",
    "--token-key",
    "--smtp-url",
];

/// Flags that have no default on purpose: a service refuses to start
/// without them.
const REQUIRED: [&str; 1] = ["--internal-key-file"];

/// `binary args… --help`, as text.
fn help(binary: &str, args: &[&str]) -> String {
    let output = std::process::Command::new(chess_e2e::binary(binary))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(output.status.success(), "{binary} --help");
    String::from_utf8(output.stdout).unwrap()
}

/// Each flag taking a value with the text that describes it.
fn flags(help: &str) -> Vec<(String, String)> {
    let mut flags: Vec<(String, String)> = Vec::new();
    for line in help.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let flag = trimmed
            .strip_prefix("-h, ")
            .or_else(|| trimmed.strip_prefix("-V, "))
            .unwrap_or(trimmed);
        if (indent == 2 || indent == 6) && flag.starts_with("--") {
            let name = flag.split_whitespace().next().unwrap_or_default();
            flags.push((name.to_owned(), flag.to_owned()));
        } else if let Some((_, text)) = flags.last_mut() {
            text.push('\n');
            text.push_str(trimmed);
        }
    }
    flags.retain(|(_, text)| text.lines().next().is_some_and(|l| l.contains('<')));
    flags
}

#[test]
fn every_flag_shows_its_default_and_values() {
    let binaries: [(&str, &[&str]); 14] = [
        ("chess-gateway", &[]),
        ("chess-matchmaking", &[]),
        ("chess-game", &[]),
        ("chess-rating", &[]),
        ("chess-engine", &[]),
        ("chess-stack", &[]),
        ("chess-stack", &["mint-assertion"]),
        ("chess-load", &["baseline"]),
        ("chess-load", &["startup"]),
        ("chess-load", &["moves"]),
        ("chess-load", &["grpc"]),
        ("chess-load", &["latency"]),
        ("chess-load", &["hints"]),
        ("chess-load", &["idle"]),
    ];
    for (binary, args) in binaries {
        let text = help(binary, args);
        let flags = flags(&text);
        assert!(!flags.is_empty(), "{binary}: {text}");
        for (name, text) in flags {
            let shown = text.contains("[default: ")
                || text.to_lowercase().contains("default:")
                || OPTIONAL.contains(&name.as_str())
                || REQUIRED.contains(&name.as_str()) && !text.contains("[default: ")
                || name == "--stack-arg"
                || name == "--log-filter" && text.contains("Defaults to");
            assert!(shown, "{binary} {args:?}: {name} shows no default:\n{text}");
        }
    }
}

#[test]
fn the_important_cases() {
    let has = |binary: &str, flag: &str, wanted: &[&str]| {
        let text = help(binary, &[]);
        let (_, described) = flags(&text)
            .into_iter()
            .find(|(name, _)| name == flag)
            .unwrap_or_else(|| panic!("{binary} has no {flag}"));
        for want in wanted {
            assert!(described.contains(want), "{binary} {flag}: {described}");
        }
    };
    has("chess-gateway", "--listen", &["[default: 127.0.0.1:50051]"]);
    has(
        "chess-matchmaking",
        "--listen",
        &["[default: 127.0.0.1:50052]"],
    );
    has("chess-game", "--listen", &["[default: 127.0.0.1:50053]"]);
    has("chess-rating", "--listen", &["[default: 127.0.0.1:50054]"]);
    has("chess-engine", "--listen", &["[default: 127.0.0.1:50055]"]);
    has(
        "chess-game",
        "--engine-addr",
        &["[default: 127.0.0.1:50055]"],
    );
    has(
        "chess-stack",
        "--rating-system",
        &[
            "[default: club-elo]",
            "[possible values: club-elo, logistic-elo, glicko2]",
        ],
    );
    has(
        "chess-rating",
        "--rating-system",
        &["club-elo", "logistic-elo", "glicko2"],
    );
    has(
        "chess-stack",
        "--game-listen",
        &["[default: 127.0.0.1:50053]"],
    );
    has(
        "chess-stack",
        "--log-format",
        &["text", "json", "[default: text]"],
    );
    has(
        "chess-gateway",
        "--notify-daily-moves",
        &["[possible values: true, false]"],
    );
}

#[test]
fn a_value_outside_the_list_is_refused() {
    let output = std::process::Command::new(chess_e2e::binary("chess-stack"))
        .args(["--rating-system", "elo"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("chess-stack: error: invalid value 'elo' for '--rating-system"),
        "{stderr}"
    );
}
