//! [`wrapping_layer!`]: the stateless tower layer and the service it wraps
//! around the inner one, declared once for every such pair in the services
//! (tracing here, status capping in chess-runtime).

#[doc(hidden)]
pub use tower as __tower;

/// Declares a unit `pub struct $layer` (a `tower::Layer`) and the
/// `pub struct $service<S> { inner: S }` it makes; the caller writes the
/// service's `tower::Service` impl, the one part that differs.
#[macro_export]
macro_rules! wrapping_layer {
    (
        $(#[$layer_doc:meta])* $layer:ident,
        $(#[$service_doc:meta])* $service:ident $(,)?
    ) => {
        $(#[$layer_doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $layer;

        impl<S> $crate::layer::__tower::Layer<S> for $layer {
            type Service = $service<S>;

            fn layer(&self, inner: S) -> Self::Service {
                $service { inner }
            }
        }

        $(#[$service_doc])*
        #[derive(Clone, Debug)]
        pub struct $service<S> {
            inner: S,
        }
    };
}
