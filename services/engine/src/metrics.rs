//! The service's OpenTelemetry instruments (exported when OTLP is on).
//!
//! - `engine.requests` (counter): finished requests by `rpc` and gRPC `code`
//!   (`Cancelled` when the caller went away first).
//! - `engine.restarts` (counter): Stockfish restarts after a failure.
//! - `engine.queue.depth` (gauge): requests waiting for a process.
//! - `engine.processes.alive` (gauge): live Stockfish processes.
//! - `engine.search.duration` (histogram, s): time a process spent on one
//!   search, by `rpc`.
//! - `engine.queue.wait` (histogram, s): time requests waited for a process.

use std::time::Duration;

use opentelemetry::{
    KeyValue,
    metrics::{Counter, Histogram, ObservableGauge},
};

#[derive(Debug)]
pub(crate) struct Metrics {
    requests: Counter<u64>,
    restarts: Counter<u64>,
    search_time: Histogram<f64>,
    queue_wait: Histogram<f64>,
    _queue_depth: ObservableGauge<u64>,
    _alive: ObservableGauge<u64>,
}

impl Metrics {
    /// Instruments reading the queue depth and the live process count from
    /// the given functions.
    pub(crate) fn new(
        queue_depth: impl Fn() -> u64 + Send + Sync + 'static,
        alive: impl Fn() -> u64 + Send + Sync + 'static,
    ) -> Self {
        let meter = chess_telemetry::meter("chess-engine");
        Self {
            requests: meter
                .u64_counter("engine.requests")
                .with_description("Requests finished, by RPC and gRPC code")
                .build(),
            restarts: meter
                .u64_counter("engine.restarts")
                .with_description("Stockfish processes restarted after a failure")
                .build(),
            search_time: meter
                .f64_histogram("engine.search.duration")
                .with_unit("s")
                .with_description("Time a process spent on one search")
                .build(),
            queue_wait: meter
                .f64_histogram("engine.queue.wait")
                .with_unit("s")
                .with_description("Time requests waited for a free process")
                .build(),
            _queue_depth: meter
                .u64_observable_gauge("engine.queue.depth")
                .with_description("Requests waiting for a process")
                .with_callback(move |observer| observer.observe(queue_depth(), &[]))
                .build(),
            _alive: meter
                .u64_observable_gauge("engine.processes.alive")
                .with_description("Live Stockfish processes")
                .with_callback(move |observer| observer.observe(alive(), &[]))
                .build(),
        }
    }

    /// Counts one request of `rpc` when the returned record is finished or
    /// dropped.
    pub(crate) fn request(&self, rpc: &'static str) -> RequestRecord {
        RequestRecord {
            requests: self.requests.clone(),
            rpc,
            code: None,
        }
    }

    pub(crate) fn restarted(&self) {
        self.restarts.add(1, &[]);
    }

    pub(crate) fn searched(&self, rpc: &'static str, took: Duration) {
        self.search_time
            .record(took.as_secs_f64(), &[KeyValue::new("rpc", rpc)]);
    }

    pub(crate) fn waited(&self, took: Duration) {
        self.queue_wait.record(took.as_secs_f64(), &[]);
    }
}

/// One request being counted; dropped unfinished, it counts as cancelled.
#[derive(Debug)]
pub(crate) struct RequestRecord {
    requests: Counter<u64>,
    rpc: &'static str,
    code: Option<tonic::Code>,
}

impl RequestRecord {
    pub(crate) fn finish(&mut self, code: tonic::Code) {
        self.code.get_or_insert(code);
    }
}

impl Drop for RequestRecord {
    fn drop(&mut self) {
        let code = self.code.unwrap_or(tonic::Code::Cancelled);
        self.requests.add(
            1,
            &[
                KeyValue::new("rpc", self.rpc),
                KeyValue::new("code", format!("{code:?}")),
            ],
        );
    }
}
