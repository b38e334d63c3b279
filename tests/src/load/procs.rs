//! CPU time and memory of the processes under test, from `/proc`.

use std::collections::BTreeMap;

/// Resource use of one process.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// User plus system CPU time, in seconds.
    pub cpu_secs: f64,
    /// Resident memory now, in KiB.
    pub rss_kib: u64,
    /// Peak resident memory, in KiB.
    pub peak_rss_kib: u64,
}

/// Linux reports times in `/proc` in units of USER_HZ, 100 per second on
/// every architecture it exposes to user space.
fn clock_ticks_per_second() -> f64 {
    100.0
}

/// The usage of process `pid`, if it exists.
pub fn usage(pid: u32) -> Option<Usage> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) start at
    // field 3 (state); utime and stime are fields 14 and 15.
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Some(Usage {
        cpu_secs: (utime + stime) / clock_ticks_per_second(),
        rss_kib: kib("VmRSS:"),
        peak_rss_kib: kib("VmHWM:"),
    })
}

/// Every process under `root` (not included), by program name; processes
/// with the same name (Stockfish) are summed.
pub fn tree_usage(root: u32) -> BTreeMap<String, (usize, Usage)> {
    let mut by_name: BTreeMap<String, (usize, Usage)> = BTreeMap::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        for child in crate::children_of(pid) {
            stack.push(child);
            let (Some(name), Some(u)) = (crate::process_name(child), usage(child)) else {
                continue;
            };
            let entry = by_name.entry(name).or_default();
            entry.0 += 1;
            entry.1.cpu_secs += u.cpu_secs;
            entry.1.rss_kib += u.rss_kib;
            entry.1.peak_rss_kib += u.peak_rss_kib;
        }
    }
    by_name
}

/// [`tree_usage`] of `root`, and this process (the load generator, which
/// shares the machine with what it measures) as `chess-load`.
pub fn tree_and_own_usage(root: u32) -> BTreeMap<String, (usize, Usage)> {
    let mut by_name = tree_usage(root);
    if let Some(own) = usage(std::process::id()) {
        by_name.insert("chess-load".to_owned(), (1, own));
    }
    by_name
}

/// CPU seconds each process used between two snapshots.
pub fn cpu_between(
    before: &BTreeMap<String, (usize, Usage)>,
    after: &BTreeMap<String, (usize, Usage)>,
) -> BTreeMap<String, f64> {
    after
        .iter()
        .map(|(name, (_, u))| {
            let earlier = before.get(name).map_or(0.0, |(_, b)| b.cpu_secs);
            (name.clone(), u.cpu_secs - earlier)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_own_usage() {
        let me = usage(std::process::id()).unwrap();
        assert!(me.rss_kib > 0);
        assert!(me.peak_rss_kib >= me.rss_kib);
        assert!(me.cpu_secs >= 0.0);
        assert!(usage(u32::MAX).is_none());
    }
}
