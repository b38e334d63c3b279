//! W3C trace context in gRPC metadata, as tower layers for tonic servers and
//! channels.

use std::task::{Context, Poll};

use opentelemetry::{
    global,
    propagation::{Extractor, Injector},
};
use tracing::{Instrument as _, instrument::Instrumented};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

struct HeaderInjector<'a>(&'a mut http::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::header::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// The trace context of the current span, as a message carries it (a call
/// streaming many requests sends each its own): empty when the span is not
/// traced.
pub fn current_context() -> std::collections::HashMap<String, String> {
    let mut carried = std::collections::HashMap::new();
    let context = tracing::Span::current().context();
    global::get_text_map_propagator(|p| p.inject_context(&context, &mut carried));
    carried
}

/// A span named `name` whose parent is the trace context a message carried
/// ([`current_context`] on the sending side).
pub fn span_from(
    name: &'static str,
    carried: &std::collections::HashMap<String, String>,
) -> tracing::Span {
    let span = tracing::debug_span!("message", otel.name = name);
    if !carried.is_empty() {
        let parent = global::get_text_map_propagator(|p| p.extract(carried));
        // A parent that cannot be attached only means the span stays local.
        let _ = span.set_parent(parent);
    }
    span
}

/// Splits `/pkg.Service/Method` into its service and method.
fn rpc_parts(path: &str) -> (&str, &str) {
    let path = path.trim_start_matches('/');
    path.split_once('/').unwrap_or((path, ""))
}

/// Probes and reflection are polled constantly and say nothing about a
/// request's path through the system.
fn is_infrastructure(service: &str) -> bool {
    service.starts_with("grpc.health.") || service.starts_with("grpc.reflection.")
}

/// The span of a gRPC call at one end, `name` and `kind` (OpenTelemetry's
/// span kind) telling which, with the call's service and method.
macro_rules! rpc_span {
    ($name:literal, $kind:literal, $service:ident, $method:ident) => {
        tracing::debug_span!(
            $name,
            otel.name = %format_args!("{}/{}", $service, $method),
            otel.kind = $kind,
            rpc.system = "grpc",
            rpc.service = %$service,
            rpc.method = %$method,
        )
    };
}

/// The `tower::Service` of a tracing layer's `$service`: ready when the
/// inner service is, it makes each call within the span `$span` gives for
/// the request (having amended it, a client's to carry the span's context).
macro_rules! traced_service {
    ($service:ident, $span:ident) => {
        impl<S, B> tower::Service<http::Request<B>> for $service<S>
        where
            S: tower::Service<http::Request<B>>,
        {
            type Response = S::Response;
            type Error = S::Error;
            type Future = Instrumented<S::Future>;

            fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
                self.inner.poll_ready(cx)
            }

            fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
                let span = $span(&mut request);
                let future = span.in_scope(|| self.inner.call(request));
                future.instrument(span)
            }
        }
    };
}

crate::wrapping_layer!(
    /// Layer for a tonic server: each call runs in a `grpc.server` span whose
    /// parent is the caller's span, taken from the `traceparent` header.
    ServerTraceLayer,
    /// The service made by [`ServerTraceLayer`].
    ServerTrace,
);

traced_service!(ServerTrace, server_span);

/// A call's server span: none for the infrastructure's calls.
fn server_span<B>(request: &mut http::Request<B>) -> tracing::Span {
    let (service, method) = rpc_parts(request.uri().path());
    if is_infrastructure(service) {
        return tracing::Span::none();
    }
    let span = rpc_span!("grpc.server", "server", service, method);
    let parent =
        global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(request.headers())));
    // A parent that cannot be attached (no OpenTelemetry layer installed)
    // only means the span stays local.
    let _ = span.set_parent(parent);
    span
}

crate::wrapping_layer!(
    /// Layer for a tonic channel: each call runs in a `grpc.client` span whose
    /// context is sent in the `traceparent` header.
    ClientTraceLayer,
    /// The service made by [`ClientTraceLayer`].
    ClientTrace,
);

impl<S> ClientTrace<S> {
    /// The wrapped service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

traced_service!(ClientTrace, client_span);

/// A call's client span, its context put in the request's headers.
fn client_span<B>(request: &mut http::Request<B>) -> tracing::Span {
    let (service, method) = rpc_parts(request.uri().path());
    let span = rpc_span!("grpc.client", "client", service, method);
    let context = span.context();
    global::get_text_map_propagator(|p| {
        p.inject_context(&context, &mut HeaderInjector(request.headers_mut()));
    });
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpc_paths_split_into_service_and_method() {
        assert_eq!(
            rpc_parts("/chess.game.v1.GameService/MakeMove"),
            ("chess.game.v1.GameService", "MakeMove")
        );
        assert_eq!(rpc_parts("/odd"), ("odd", ""));
        assert!(is_infrastructure("grpc.health.v1.Health"));
        assert!(is_infrastructure("grpc.reflection.v1.ServerReflection"));
        assert!(!is_infrastructure("chess.engine.v1.EngineService"));
    }

    #[test]
    fn trace_context_round_trips_through_headers() {
        use opentelemetry::propagation::TextMapPropagator as _;
        use opentelemetry::trace::{
            SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
        };
        use opentelemetry_sdk::propagation::TraceContextPropagator;

        let propagator = TraceContextPropagator::new();
        let sent = SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            TraceFlags::SAMPLED,
            true,
            TraceState::default(),
        );
        let cx = opentelemetry::Context::new().with_remote_span_context(sent.clone());
        let mut headers = http::HeaderMap::new();
        propagator.inject_context(&cx, &mut HeaderInjector(&mut headers));
        assert_eq!(
            headers["traceparent"],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        let received = propagator.extract(&HeaderExtractor(&headers));
        assert_eq!(received.span().span_context().trace_id(), sent.trace_id());
        assert_eq!(received.span().span_context().span_id(), sent.span_id());
    }
}
