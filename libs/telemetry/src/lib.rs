//! Telemetry shared by every chess binary.
//!
//! [`init`] is called once from `main`: it installs structured logs on stderr
//! (text or JSON, filtered like `RUST_LOG`), and, when the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` variable is set, exports traces and metrics
//! over OTLP/gRPC. Without that variable nothing is exported and nothing is
//! slowed down.
//!
//! The console is quiet by default ([`DEFAULT_FILTER`]): start-up, warnings,
//! errors and the few lines a service writes about what happens to players
//! (a game started, a game finished). Every RPC's span and the events inside
//! it are at `debug`, shown with `--log-filter debug` and always exported
//! over OTLP, whose filter is separate from the console's.
//!
//! Traces cross process boundaries in gRPC metadata as W3C `traceparent`:
//! [`ServerTraceLayer`] (in `propagation`) starts each server span as a child of
//! the caller's, and [`ClientTraceLayer`] stamps outgoing calls with the current
//! span, so one request through gateway, game and engine is one trace.
//! [`wrapping_layer!`] declares such a layer and its service.

#[doc(hidden)]
pub mod layer;
mod propagation;

use std::time::Duration;

use opentelemetry::{KeyValue, global, trace::TracerProvider as _};
use opentelemetry_sdk::{
    Resource, metrics::SdkMeterProvider, propagation::TraceContextPropagator,
    trace::SdkTracerProvider,
};
use tracing_subscriber::{
    EnvFilter, Layer as _, layer::SubscriberExt as _, util::SubscriberInitExt as _,
};

pub use propagation::{
    ClientTrace, ClientTraceLayer, ServerTrace, ServerTraceLayer, current_context, span_from,
};

/// The console's filter when neither `--log-filter` nor `RUST_LOG` is set.
/// Migrations say what they apply at `info`, a dozen lines per start.
pub const DEFAULT_FILTER: &str = "info,sea_orm_migration=warn";

/// The standard variable that turns OTLP export on.
pub const OTLP_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Logging flags every binary accepts.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct TelemetryArgs {
    /// Log line format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Which logs to keep, in `RUST_LOG` syntax (e.g. `info,chess_game=debug`;
    /// `debug` adds a line for every RPC). Defaults to `RUST_LOG`, then
    /// `info,sea_orm_migration=warn`.
    #[arg(long)]
    pub log_filter: Option<String>,
}

/// Errors from [`init`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid log filter: {0}")]
    Filter(String),
    #[error("cannot set up the OTLP exporter: {0}")]
    Exporter(String),
    #[error("a global logger was already installed")]
    AlreadyInstalled,
}

/// Keeps the exporters alive; dropping it flushes what is buffered.
#[derive(Debug)]
#[must_use = "dropping the guard stops exporting telemetry"]
pub struct TelemetryGuard {
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
}

impl TelemetryGuard {
    /// Whether traces and metrics are exported.
    pub fn exporting(&self) -> bool {
        self.tracer_provider.is_some()
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        // Flushing is best effort at exit: a collector that went away must not
        // keep the process from stopping.
        if let Some(provider) = self.tracer_provider.take() {
            let _ = provider.shutdown_with_timeout(Duration::from_secs(3));
        }
        if let Some(provider) = self.meter_provider.take() {
            let _ = provider.shutdown_with_timeout(Duration::from_secs(3));
        }
    }
}

/// Installs logging, tracing and metrics for the service `service` (e.g.
/// `"game"`; it is reported as `chess-game`). Must be called from within a
/// Tokio runtime when OTLP export is on.
pub fn init(service: &str, args: &TelemetryArgs) -> Result<TelemetryGuard, Error> {
    global::set_text_map_propagator(TraceContextPropagator::new());

    let filter = match &args.log_filter {
        Some(directives) => EnvFilter::try_new(directives),
        None => EnvFilter::try_from_default_env().or_else(|_| EnvFilter::try_new(DEFAULT_FILTER)),
    }
    .map_err(|e| Error::Filter(e.to_string()))?;

    let exporting = std::env::var_os(OTLP_ENDPOINT_VAR).is_some_and(|v| !v.is_empty());
    let resource = Resource::builder()
        .with_service_name(format!("chess-{service}"))
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();

    let (tracer_provider, meter_provider) = if exporting {
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .build()
            .map_err(|e| Error::Exporter(e.to_string()))?;
        let tracer_provider = SdkTracerProvider::builder()
            .with_resource(resource.clone())
            .with_batch_exporter(spans)
            .build();
        let metrics = opentelemetry_otlp::MetricExporter::builder()
            .with_tonic()
            .build()
            .map_err(|e| Error::Exporter(e.to_string()))?;
        let meter_provider = SdkMeterProvider::builder()
            .with_resource(resource)
            .with_periodic_exporter(metrics)
            .build();
        global::set_meter_provider(meter_provider.clone());
        (Some(tracer_provider), Some(meter_provider))
    } else {
        (None, None)
    };

    let otel_layer = tracer_provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer(format!("chess-{service}")))
            .with_filter(tracing_subscriber::filter::filter_fn(exported))
    });

    let fmt_layer = match args.log_format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_target(true)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .boxed(),
    };

    tracing_subscriber::registry()
        .with(otel_layer)
        .with(fmt_layer.with_filter(filter))
        .try_init()
        .map_err(|_| Error::AlreadyInstalled)?;

    Ok(TelemetryGuard {
        tracer_provider,
        meter_provider,
    })
}

/// What the OTLP exporter receives: every span of our own crates (the RPC
/// spans are at `debug` so the console leaves them out) and what else is at
/// `info` or above; not the debug chatter of the libraries underneath.
fn exported(metadata: &tracing::Metadata<'_>) -> bool {
    use tracing::Level;
    let level = *metadata.level();
    level <= Level::INFO
        || (level <= Level::DEBUG && metadata.is_span() && metadata.target().starts_with("chess_"))
}

/// The meter a service records its metrics with. A no-op unless [`init`] turned
/// OTLP export on.
pub fn meter(service: &'static str) -> opentelemetry::metrics::Meter {
    global::meter(service)
}
