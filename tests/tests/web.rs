//! The web page against the real stack (`chess-stack`, serving the page the
//! gateway embedded from `web/dist`):
//!
//! - browser scenarios, one Python file each under `tests/web/`, driving
//!   Debian's Chromium with Playwright (helpers in `tests/web/browser.py`);
//!   their screenshots land in `target/web-tests/<scenario>/`;
//! - the page's own client code (`web/src/api.ts`) under Node, checking that
//!   refusals reach a gRPC-Web client with their code, `chess-reason` and
//!   the server's sentence (`web/tests/grpc-web-errors.ts`).
//!
//! Needs Chromium (`/usr/bin/chromium`, or `CHESS_TEST_CHROMIUM`), `python3`
//! with Playwright, Node 20 or later and `web/node_modules`: `scripts/setup
//! test` installs them all, and `scripts/test` puts `.venv/bin` first on
//! `PATH`. A missing one fails the test with the fix, never skips it.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use chess_e2e::StackProcess;
use tokio::{process::Command, time::timeout};

/// How long one scenario may take, stack start-up excluded.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(300);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_owned()
}

/// `target/web-tests/<name>/`, emptied.
fn output_dir(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // Tests run from target/<profile>/deps/.
    let target = exe
        .ancestors()
        .find(|dir| dir.file_name().is_some_and(|n| n == "deps"))
        .and_then(|deps| deps.parent()?.parent())
        .expect("the target directory");
    let dir = target.join("web-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the screenshot folder");
    dir
}

fn chromium() -> PathBuf {
    let path = std::env::var_os("CHESS_TEST_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.is_file(),
        "the browser tests need Chromium at {}: install Debian's with \
         `sudo apt-get install chromium` (scripts/setup test does), or set \
         CHESS_TEST_CHROMIUM to another build",
        path.display()
    );
    path
}

/// Fails with the fix if a program the test runs is missing or refuses.
async fn require(program: &str, args: &[&str], fix: &str) {
    let probe = Command::new(program).args(args).output().await;
    match probe {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!("{fix}\n{}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => panic!("{fix}\n({program}: {e})"),
    }
}

/// Runs `tests/web/<scenario>.py` against a fresh stack.
async fn browser_scenario(scenario: &str) {
    browser_scenario_with(scenario, &[]).await;
}

/// As [`browser_scenario`], the stack started with `env`.
async fn browser_scenario_with(scenario: &str, env: &[(&str, &str)]) {
    let chromium = chromium();
    require(
        "python3",
        &["-c", "import playwright.sync_api"],
        "the browser tests need Playwright for Python (tests/python/requirements.txt): run \
         them through scripts/test, or put .venv/bin (from scripts/setup test) first on PATH",
    )
    .await;
    let out = output_dir(scenario);
    let stack = StackProcess::start(&[], env).await;
    let mut python = Command::new("python3")
        .arg(repo().join("tests/web").join(format!("{scenario}.py")))
        .env("CHESS_WEB_URL", format!("http://{}", stack.gateway))
        .env("CHESS_WEB_OUT", &out)
        // Scenarios that kill a service find it among this process's children.
        .env(
            "CHESS_STACK_PID",
            stack.child.id().expect("chess-stack runs").to_string(),
        )
        .env("CHESS_TEST_CHROMIUM", &chromium)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start python3");
    let status = timeout(SCENARIO_TIMEOUT, python.wait())
        .await
        .unwrap_or_else(|_| panic!("{scenario} took longer than {SCENARIO_TIMEOUT:?}"))
        .expect("wait for python3");
    stack.stop().await;
    assert!(
        status.success(),
        "browser scenario {scenario} failed ({status}); screenshots in {}",
        out.display()
    );
}

#[tokio::test]
async fn accounts_in_the_browser() {
    browser_scenario("accounts").await;
}

#[tokio::test]
async fn two_players_meet_in_the_lobby_and_play_a_rated_game_with_the_mouse() {
    browser_scenario("rated_game").await;
}

#[tokio::test]
async fn a_rated_games_end_shows_rating_changes_and_the_profile_lists_and_exports_games() {
    browser_scenario("history").await;
}

#[tokio::test]
async fn a_threefold_repetition_is_offered_once_it_stands_and_claimed_as_a_draw() {
    browser_scenario("repetition").await;
}

#[tokio::test]
async fn both_pages_recover_from_a_gateway_restart_with_no_lost_move() {
    browser_scenario("gateway_restart").await;
}

#[tokio::test]
async fn the_computer_at_full_strength_answers_a_move_and_gives_hints() {
    browser_scenario("computer").await;
}

#[tokio::test]
async fn the_board_reads_right_on_a_phone_and_refusals_are_plain_sentences() {
    browser_scenario("board_layout").await;
}

#[tokio::test]
async fn a_refused_registration_shows_the_wait_in_words() {
    browser_scenario_with(
        "registration_limit",
        &[("CHESS_GATEWAY_REGISTRATIONS_PER_ADDRESS", "2")],
    )
    .await;
}

#[tokio::test]
async fn quick_pairing_joins_a_waiting_player_or_waits_for_one() {
    browser_scenario("quick_pairing").await;
}

#[tokio::test]
async fn a_premove_is_played_on_the_opponents_move_cancelled_by_a_click_or_dropped() {
    browser_scenario("premove").await;
}

/// Bundles `web/tests/<name>.ts` (and the page's code it imports) for Node
/// into `dir`, returning the script.
async fn bundle_for_node(name: &str, dir: &Path) -> PathBuf {
    let web = repo().join("web");
    let esbuild = web.join("node_modules/.bin/esbuild");
    assert!(
        esbuild.is_file(),
        "{} is missing: install web/'s packages with scripts/setup test (or `cd web && npm ci`)",
        esbuild.display()
    );
    let script = dir.join(format!("{name}.mjs"));
    let output = Command::new(&esbuild)
        .current_dir(&web)
        .arg(format!("tests/{name}.ts"))
        .args([
            "--bundle",
            "--platform=node",
            "--format=esm",
            "--log-level=warning",
        ])
        .arg(format!("--outfile={}", script.display()))
        .output()
        .await
        .expect("run esbuild");
    assert!(
        output.status.success(),
        "esbuild could not bundle web/tests/{name}.ts:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    script
}

#[tokio::test]
async fn refusals_reach_a_grpc_web_client_with_code_reason_and_sentence() {
    require(
        "node",
        &[
            "-e",
            "if (+process.versions.node.split('.')[0] < 20) throw new Error(process.version)",
        ],
        "this test needs Node.js 20 or later (its built-in fetch): scripts/setup test installs it",
    )
    .await;
    let dir = tempfile::tempdir().expect("temp dir");
    let script = bundle_for_node("grpc-web-errors", dir.path()).await;
    let stack = StackProcess::start(&[], &[]).await;
    let output = timeout(
        SCENARIO_TIMEOUT,
        Command::new("node")
            .arg(&script)
            .env("CHESS_WEB_URL", format!("http://{}", stack.gateway))
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the Node client finished in time")
    .expect("run node");
    stack.stop().await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the Node client failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );

    let outcomes: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let unknown = "00000000-0000-4000-8000-000000000000";
    let expected = [
        (
            "wrong-password",
            tonic::Code::Unauthenticated,
            None,
            "Wrong login or password.".to_owned(),
        ),
        (
            "move-out-of-turn",
            tonic::Code::FailedPrecondition,
            Some("not-your-turn"),
            "It is not your turn.".to_owned(),
        ),
        (
            "unknown-game",
            tonic::Code::NotFound,
            Some("not-found"),
            format!("There is no game {unknown}."),
        ),
        (
            "illegal-move",
            tonic::Code::FailedPrecondition,
            Some("illegal-move"),
            "e2e5 is not a legal move here.".to_owned(),
        ),
        (
            "malformed-move",
            tonic::Code::InvalidArgument,
            Some("malformed-move"),
            "\"pawn to e4\" is not a move in UCI or SAN notation.".to_owned(),
        ),
        (
            "watch-unknown-game",
            tonic::Code::NotFound,
            Some("not-found"),
            format!("There is no game {unknown}."),
        ),
    ];
    assert_eq!(
        outcomes.len(),
        expected.len(),
        "one line per case:\n{stdout}"
    );
    for (outcome, (case, code, reason, described)) in outcomes.iter().zip(&expected) {
        assert_eq!(outcome["case"], *case, "{stdout}");
        assert!(
            outcome.get("error").is_none(),
            "{case}: {}",
            outcome["error"]
        );
        assert_eq!(
            outcome["code"], *code as i32,
            "{case}: the status code ({code:?} expected)"
        );
        assert_eq!(
            outcome["reason"].as_str(),
            *reason,
            "{case}: the chess-reason"
        );
        assert_eq!(
            outcome["described"].as_str(),
            Some(described.as_str()),
            "{case}: what describeError tells the player"
        );
    }
}

#[tokio::test]
async fn the_lobbys_tv_and_the_live_games_follow_a_game_and_its_watchers() {
    browser_scenario("live").await;
}

#[tokio::test]
async fn a_takeback_is_declined_withdrawn_and_accepted_on_both_pages() {
    browser_scenario("takeback").await;
}

#[tokio::test]
async fn the_players_directory_searches_sorts_pages_and_shows_presence_and_profiles_mute() {
    // Glicko-2, whose new ratings are provisional (Club Elo has none).
    browser_scenario_with("players", &[("CHESS_STACK_RATING_SYSTEM", "glicko2")]).await;
}
