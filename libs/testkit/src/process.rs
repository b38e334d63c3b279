//! Processes seen through `/proc`, and signals.

/// The direct children of process `pid`, sorted.
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return children;
    };
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            children.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    children.sort_unstable();
    children.dedup();
    children
}

/// The program name of process `pid`: the file name of its executable as
/// started.
pub fn process_name(pid: u32) -> Option<String> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let program = cmdline.split(|&b| b == 0).next()?;
    let program = std::path::Path::new(std::str::from_utf8(program).ok()?);
    program.file_name()?.to_str().map(str::to_owned)
}

/// Whether process `pid` still exists (and is not a zombie).
pub fn is_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            stat.rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next())
                != Some("Z")
        }
        Err(_) => false,
    }
}

/// CPU time used by process `pid` so far (user and system), in clock ticks;
/// 0 if it is gone.
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): state is the
    // first, utime the 12th and stime the 13th.
    let after = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    field(11) + field(12)
}

/// CPU time used by the processes `pids` so far, in clock ticks.
pub fn cpu_ticks_of(pids: &[u32]) -> u64 {
    pids.iter().map(|&pid| cpu_ticks(pid)).sum()
}

/// The clock ticks the processes `pids` use in one second, counted once
/// `settle` has passed: for what must have gone quiet (an engine pool whose
/// callers left) after the moment it takes to notice.
pub async fn ticks_in_a_second_after(pids: &[u32], settle: std::time::Duration) -> u64 {
    tokio::time::sleep(settle).await;
    let before = cpu_ticks_of(pids);
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    cpu_ticks_of(pids) - before
}

/// Every process under process `root`, at any depth.
pub fn descendants_of(root: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut pending = vec![root];
    while let Some(pid) = pending.pop() {
        for child in children_of(pid) {
            found.push(child);
            pending.push(child);
        }
    }
    found
}

/// The Stockfish processes under process `root`, at any depth.
pub fn stockfish_under(root: u32) -> Vec<u32> {
    descendants_of(root)
        .into_iter()
        .filter(|&pid| process_name(pid).as_deref() == Some("stockfish"))
        .collect()
}

/// A Stockfish of its own for a test to ask (`/usr/games/stockfish`, its
/// standard input and output piped), killed when dropped.
pub fn stockfish() -> tokio::process::Child {
    tokio::process::Command::new("/usr/games/stockfish")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("Stockfish is installed at /usr/games/stockfish")
}

/// Sends `signal` to `pid`; a process that is already gone is no error
/// (that is what callers check next).
pub fn signal(pid: u32, signal: nix::sys::signal::Signal) {
    let Ok(raw) = i32::try_from(pid) else { return };
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), signal);
}

/// Sends SIGKILL to `pid`.
pub fn kill9(pid: u32) {
    signal(pid, nix::sys::signal::Signal::SIGKILL);
}

/// One thread's scheduling, read from `/proc/<pid>/task/<tid>/stat`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadScheduling {
    /// The thread's name (`comm`).
    pub name: String,
    /// Its policy (field 41): 0 `SCHED_OTHER`, 1 `SCHED_FIFO`, 2
    /// `SCHED_RR`, 3 `SCHED_BATCH`, 5 `SCHED_IDLE`.
    pub policy: u32,
    /// Its real-time priority (field 40), 0 outside the real-time policies.
    pub priority: u32,
}

/// The scheduling of every thread of process `pid` (none if it is gone).
pub fn thread_scheduling(pid: u32) -> Vec<ThreadScheduling> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let name = std::fs::read_to_string(task.path().join("comm")).ok()?;
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            // Fields after the name (which may hold spaces) start at field 3.
            let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
            Some(ThreadScheduling {
                name: name.trim().to_owned(),
                priority: fields.get(40 - 3)?.parse().ok()?,
                policy: fields.get(41 - 3)?.parse().ok()?,
            })
        })
        .collect()
}
