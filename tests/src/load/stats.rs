//! Latency samples and their percentiles.

use std::time::Duration;

/// Latencies in microseconds.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    micros: Vec<u32>,
}

impl Samples {
    pub fn record(&mut self, latency: Duration) {
        self.micros
            .push(latency.as_micros().min(u128::from(u32::MAX)) as u32);
    }

    pub fn merge(&mut self, other: Samples) {
        self.micros.extend(other.micros);
    }

    pub fn len(&self) -> usize {
        self.micros.len()
    }

    pub fn is_empty(&self) -> bool {
        self.micros.is_empty()
    }

    /// The summary, or `None` without samples.
    pub fn summary(&self) -> Option<Summary> {
        if self.micros.is_empty() {
            return None;
        }
        let mut sorted = self.micros.clone();
        sorted.sort_unstable();
        let at = |q: f64| {
            let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
            Duration::from_micros(u64::from(sorted[rank - 1]))
        };
        let total: u64 = sorted.iter().map(|&m| u64::from(m)).sum();
        Some(Summary {
            count: sorted.len(),
            mean: Duration::from_micros(total / sorted.len() as u64),
            p50: at(0.50),
            p99: at(0.99),
            p999: at(0.999),
            max: Duration::from_micros(u64::from(sorted[sorted.len() - 1])),
        })
    }
}

/// Percentiles of a set of latencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    pub count: usize,
    pub mean: Duration,
    pub p50: Duration,
    pub p99: Duration,
    pub p999: Duration,
    pub max: Duration,
}

/// `d` in milliseconds with three decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

impl Summary {
    /// One line: count, p50/p99/p99.9/max, and p50 and p99 as multiples of
    /// `baseline`'s p50 if given.
    pub fn line(&self, baseline: Option<(&str, Duration)>) -> String {
        let mut line = format!(
            "n={} p50={} p99={} p99.9={} max={}",
            self.count,
            ms(self.p50),
            ms(self.p99),
            ms(self.p999),
            ms(self.max)
        );
        if let Some((name, base)) = baseline
            && !base.is_zero()
        {
            line.push_str(&format!(
                "  (p50 = {:.1}x, p99 = {:.1}x {name})",
                self.p50.as_secs_f64() / base.as_secs_f64(),
                self.p99.as_secs_f64() / base.as_secs_f64()
            ));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let mut s = Samples::default();
        assert!(s.summary().is_none());
        for m in 1..=1000u64 {
            s.record(Duration::from_micros(m));
        }
        let sum = s.summary().unwrap();
        assert_eq!(sum.count, 1000);
        assert_eq!(sum.p50, Duration::from_micros(500));
        assert_eq!(sum.p99, Duration::from_micros(990));
        assert_eq!(sum.p999, Duration::from_micros(999));
        assert_eq!(sum.max, Duration::from_micros(1000));
        assert_eq!(ms(Duration::from_micros(1500)), "1.500 ms");
    }
}
