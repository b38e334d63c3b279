//! Load through the uqchess front: games between pairs of connections
//! playing random legal moves as fast as the server answers, clients asking
//! the engine for hints, and idle connections.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use rand::{Rng as _, SeedableRng as _, rngs::StdRng};
use shakmaty::{CastlingMode, Chess, Color, Position as _};
use tokio::{
    io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines},
    net::{
        TcpStream,
        tcp::{OwnedReadHalf, OwnedWriteHalf},
    },
    sync::Mutex,
};

use super::stats::Samples;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// One uqchess connection.
struct Conn {
    lines: Lines<BufReader<OwnedReadHalf>>,
    writer: OwnedWriteHalf,
}

impl Conn {
    async fn open(port: u16) -> Result<Self, Error> {
        let stream = TcpStream::connect(("127.0.0.1", port)).await?;
        stream.set_nodelay(true)?;
        let (read, writer) = stream.into_split();
        Ok(Self {
            lines: BufReader::new(read).lines(),
            writer,
        })
    }

    async fn send(&mut self, line: &str) -> Result<(), Error> {
        self.writer.write_all(line.as_bytes()).await?;
        Ok(())
    }

    async fn line(&mut self) -> Result<String, Error> {
        self.lines
            .next_line()
            .await?
            .ok_or_else(|| "the server closed the connection".into())
    }

    /// Reads a line and checks it.
    async fn expect(&mut self, want: &str) -> Result<(), Error> {
        let got = self.line().await?;
        if got == want {
            Ok(())
        } else {
            Err(format!("expected {want:?}, got {got:?}").into())
        }
    }
}

/// The measurement window, shared by every task.
#[derive(Debug)]
pub struct Window {
    pub start: Instant,
    pub end: Instant,
    stop: AtomicBool,
}

impl Window {
    pub fn new(warmup: Duration, duration: Duration) -> Arc<Self> {
        let start = Instant::now() + warmup;
        Arc::new(Self {
            start,
            end: start + duration,
            stop: AtomicBool::new(false),
        })
    }

    pub fn contains(&self, at: Instant) -> bool {
        at >= self.start && at < self.end
    }

    pub fn over(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || Instant::now() >= self.end
    }

    /// Ends every task early.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What the game tasks measured inside the window.
#[derive(Debug, Default)]
pub struct GameFigures {
    /// Moves acknowledged inside the window.
    pub moves: u64,
    /// Games that ended (and were replaced).
    pub games: u64,
    /// Send → `ok`.
    pub move_latency: Samples,
    /// Send → the opponent's `moved`.
    pub notify_latency: Samples,
    /// Errors that stopped a game task.
    pub errors: Vec<String>,
}

impl GameFigures {
    /// The figures of every game task added up; a task that failed adds
    /// its error instead.
    pub async fn gather(tasks: Vec<tokio::task::JoinHandle<Result<Self, Error>>>) -> Self {
        let mut total = Self::default();
        for task in tasks {
            match task.await {
                Ok(Ok(f)) => {
                    total.moves += f.moves;
                    total.games += f.games;
                    total.move_latency.merge(f.move_latency);
                    total.notify_latency.merge(f.notify_latency);
                }
                Ok(Err(e)) => total.errors.push(e.to_string()),
                Err(e) => total.errors.push(e.to_string()),
            }
        }
        total
    }
}

/// The lines both sides get after a move, beyond `ok` / `moved`.
fn aftermath(position: &Chess, mover: Color) -> Option<String> {
    let colour = if mover == Color::White {
        "white"
    } else {
        "black"
    };
    if position.is_checkmate() {
        Some(format!("gameover checkmate {colour}"))
    } else if position.is_stalemate() {
        Some("gameover stalemate".to_owned())
    } else if position.is_check() {
        Some("check".to_owned())
    } else {
        None
    }
}

/// A random legal move, avoiding those that end the game while there are
/// others: replacing a game means pairing again, which is one pair at a
/// time, so games are kept going and the load stays on the move path.
pub fn choose_move(position: &Chess, rng: &mut StdRng) -> shakmaty::Move {
    let moves = position.legal_moves();
    let first = rng.random_range(0..moves.len());
    for offset in 0..moves.len() {
        let m = moves[(first + offset) % moves.len()];
        let mut after = position.clone();
        after.play_unchecked(m);
        if !after.is_checkmate() && !after.is_stalemate() {
            return m;
        }
    }
    moves[first]
}

/// How the load generator's games are played.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    /// Plies after which a game is resigned and replaced.
    pub max_plies: u32,
    /// A player's thinking time before each move (zero: as fast as the
    /// system answers).
    pub think: Duration,
    /// Open loop: each game's moves arrive at random (exponentially spaced,
    /// a Poisson process) at this mean rate in moves per second, whatever
    /// the answers to the earlier ones; `None` is a closed loop.
    pub rate: Option<f64>,
}

impl Pace {
    /// A closed loop: each move sent once the one before it is answered,
    /// after `think`.
    pub fn closed(max_plies: u32, think: Duration) -> Self {
        Self {
            max_plies,
            think,
            rate: None,
        }
    }
}

/// When a game's moves are due.
///
/// Closed loop: now, after the thinking time. Open loop: at the arrival
/// times of a Poisson process, each gap drawn independently of the
/// server's answers. A move is sent at its due time or, if the game's
/// previous move is still unanswered then, as soon as it is answered; the
/// latency of a move held back that way counts from its due time, so a
/// slow answer is charged for the moves it delayed too (no coordinated
/// omission).
///
/// Open loop, the first game of each schedule is resigned after a number
/// of plies drawn at random up to `max_plies`, and the later ones after
/// `max_plies`. Games that all began together then end at random times, as
/// the games of a population of players do, instead of all in the same
/// second, every `max_plies` plies.
#[derive(Debug)]
pub struct Schedule {
    pace: Pace,
    rng: StdRng,
    next: Instant,
    /// Plies after which the current game is resigned.
    plies: u32,
    /// Whether a game has begun yet.
    begun: bool,
}

impl Schedule {
    pub fn new(pace: Pace, seed: u64) -> Self {
        let mut schedule = Self {
            pace,
            rng: StdRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15),
            next: Instant::now(),
            plies: pace.max_plies,
            begun: false,
        };
        schedule.arrivals_from_now();
        schedule
    }

    /// Starts a new game: its length, and its arrivals afresh from now (a
    /// new game's first move is not due before the game exists).
    pub fn begin(&mut self) {
        self.plies = match self.pace.rate {
            Some(_) if !self.begun && self.pace.max_plies > 1 => {
                self.rng.random_range(1..=self.pace.max_plies)
            }
            _ => self.pace.max_plies,
        };
        self.begun = true;
        self.arrivals_from_now();
    }

    fn arrivals_from_now(&mut self) {
        self.next = Instant::now();
        if let Some(rate) = self.pace.rate {
            self.next += Self::gap(&mut self.rng, rate);
        }
    }

    fn gap(rng: &mut StdRng, rate: f64) -> Duration {
        let uniform: f64 = rng.random_range(f64::EPSILON..1.0);
        Duration::from_secs_f64(-uniform.ln() / rate.max(1e-9))
    }

    /// The game's random numbers, for choosing its moves too.
    pub fn rng(&mut self) -> &mut StdRng {
        &mut self.rng
    }

    /// Plies after which the current game is resigned.
    pub fn max_plies(&self) -> u32 {
        self.plies
    }

    /// Waits until the next move is due; returns the instant its latency
    /// counts from.
    pub async fn due(&mut self) -> Instant {
        match self.pace.rate {
            None => {
                if !self.pace.think.is_zero() {
                    tokio::time::sleep(self.pace.think).await;
                }
                Instant::now()
            }
            Some(rate) => {
                let due = self.next;
                self.next += Self::gap(&mut self.rng, rate);
                if Instant::now() >= due {
                    // Held back by the answer to the previous move.
                    return due;
                }
                // The timer wakes up to a millisecond late: that is the load
                // generator's delay, not the server's.
                tokio::time::sleep_until(due.into()).await;
                Instant::now()
            }
        }
    }
}

/// Plays games between two connections until the window closes; a game is
/// resigned after the schedule's length (`Schedule::max_plies`) and replaced.
async fn play_games(
    port: u16,
    seed: u64,
    pairing: Arc<Mutex<()>>,
    window: Arc<Window>,
    pace: Pace,
) -> Result<GameFigures, Error> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut schedule = Schedule::new(pace, seed);
    let mut white = Conn::open(port).await?;
    let mut black = Conn::open(port).await?;
    let mut figures = GameFigures::default();
    while !window.over() {
        {
            // One pair at a time, so these two are paired with each other.
            let _pairing = pairing.lock().await;
            white.send("start human white\n").await?;
            black.send("start human black\n").await?;
            white.expect("started white").await?;
            black.expect("started black").await?;
        }
        schedule.begin();
        let mut position = Chess::default();
        let mut plies = 0;
        loop {
            if window.over() {
                return Ok(figures);
            }
            let mover = position.turn();
            let (me, them) = if mover == Color::White {
                (&mut white, &mut black)
            } else {
                (&mut black, &mut white)
            };
            if plies >= schedule.max_plies() {
                let winner = if mover == Color::White {
                    "black"
                } else {
                    "white"
                };
                me.send("resign\n").await?;
                let line = format!("gameover resignation {winner}");
                me.expect(&line).await?;
                them.expect(&line).await?;
                figures.games += 1;
                break;
            }
            let sent = schedule.due().await;
            let m = choose_move(&position, &mut rng);
            let uci = m.to_uci(CastlingMode::Standard).to_string();
            position.play_unchecked(m);
            plies += 1;
            me.send(&format!("move {uci}\n")).await?;
            let moved = format!("moved {uci}");
            let (ok, notified) = tokio::join!(
                async {
                    me.expect("ok").await?;
                    Ok::<_, Error>(Instant::now())
                },
                async {
                    them.expect(&moved).await?;
                    Ok::<_, Error>(Instant::now())
                },
            );
            let (ok, notified) = (ok?, notified?);
            if window.contains(ok) {
                figures.moves += 1;
                figures.move_latency.record(ok - sent);
                figures.notify_latency.record(notified - sent);
            }
            if let Some(line) = aftermath(&position, mover) {
                me.expect(&line).await?;
                them.expect(&line).await?;
                if line.starts_with("gameover") {
                    figures.games += 1;
                    break;
                }
            }
        }
    }
    Ok(figures)
}

/// Runs `games` concurrent games through the uqchess front at `port`.
pub async fn games(port: u16, games: usize, window: Arc<Window>, pace: Pace) -> GameFigures {
    let pairing = Arc::new(Mutex::new(()));
    let mut tasks = Vec::with_capacity(games);
    for i in 0..games {
        tasks.push(tokio::spawn(play_games(
            port,
            i as u64,
            Arc::clone(&pairing),
            Arc::clone(&window),
            pace,
        )));
    }
    GameFigures::gather(tasks).await
}

/// Clients playing the computer that ask for the best move over and over,
/// keeping the engine pool busy. Returns the hint latencies in the window.
pub async fn hints(port: u16, clients: usize, window: Arc<Window>) -> Result<Samples, Error> {
    let mut tasks = Vec::with_capacity(clients);
    for _ in 0..clients {
        let window = Arc::clone(&window);
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::open(port).await?;
            conn.send("start computer white\n").await?;
            conn.expect("started white").await?;
            let mut samples = Samples::default();
            while !window.over() {
                let sent = Instant::now();
                conn.send("hint best\n").await?;
                let line = conn.line().await?;
                if !line.starts_with("moves ") {
                    return Err(format!("unexpected hint answer {line:?}").into());
                }
                let done = Instant::now();
                if window.contains(done) {
                    samples.record(done - sent);
                }
            }
            Ok::<_, Error>(samples)
        }));
    }
    let mut all = Samples::default();
    for task in tasks {
        all.merge(task.await??);
    }
    Ok(all)
}

/// Opens `count` connections that each make one request, and keeps them.
pub async fn idle_connections(port: u16, count: usize) -> Result<Vec<TcpStream>, Error> {
    let mut streams = Vec::with_capacity(count);
    for _ in 0..count {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
        stream.write_all(b"board\n").await?;
        streams.push(stream);
    }
    // Every session has answered once it has seen its request.
    for stream in &mut streams {
        let mut reply = [0u8; 11];
        tokio::io::AsyncReadExt::read_exact(stream, &mut reply).await?;
        if &reply != b"error game\n" {
            return Err(format!("unexpected reply {:?}", String::from_utf8_lossy(&reply)).into());
        }
    }
    Ok(streams)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lengths(pace: Pace, seed: u64) -> Vec<u32> {
        let mut schedule = Schedule::new(pace, seed);
        (0..3)
            .map(|_| {
                schedule.begin();
                schedule.max_plies()
            })
            .collect()
    }

    #[test]
    fn an_open_loops_first_games_end_at_random_plies_and_later_ones_at_the_limit() {
        let pace = Pace {
            max_plies: 200,
            think: Duration::ZERO,
            rate: Some(30.0),
        };
        let firsts: Vec<u32> = (0..400)
            .map(|seed| {
                let games = lengths(pace, seed);
                assert_eq!(games[1..], [200, 200], "seed {seed}");
                games[0]
            })
            .collect();
        assert!(firsts.iter().all(|&plies| (1..=200).contains(&plies)));
        // Spread over the whole range, each quarter holding some.
        for quarter in 0..4 {
            let held = firsts
                .iter()
                .filter(|&&plies| (plies - 1) / 50 == quarter)
                .count();
            assert!(held > 50, "quarter {quarter} holds {held} of 400");
        }
    }

    #[test]
    fn a_closed_loops_games_all_end_at_the_limit() {
        for seed in 0..50 {
            assert_eq!(
                lengths(Pace::closed(200, Duration::ZERO), seed),
                [200, 200, 200]
            );
        }
    }
}
