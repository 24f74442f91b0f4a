//! How the adapter ports' suites (`vector_index`, `blob_store`, `embedder`) become tests:
//! one `#[tokio::test]` per check, or every check in turn inside one test.

/// Expands each named check `$crate::contract::$suite::$check(&subject)` into a
/// `#[tokio::test]` of the calling crate (`tests`), or into a statement of the calling test
/// (`in_sequence`), each on a fresh `(subject, guard)` from `$factory`: an expression that,
/// called with no argument, gives a future of that pair. The subject is dropped before the
/// guard, also when a check panics: the guard may hold what the subject writes to when it is
/// dropped (a temporary directory an index flushes into).
#[doc(hidden)]
#[macro_export]
macro_rules! __adapter_contract_checks {
    (tests $factory:expr, $suite:ident; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                let made = ($factory)().await;
                // Declared first, the guard outlives the subject when a check panics too.
                let guard = made.1;
                let subject = made.0;
                $crate::contract::$suite::$check(&subject).await;
                drop(subject);
                drop(guard);
            }
        )*
    };
    (in_sequence $factory:expr, $suite:ident; $($check:ident),* $(,)?) => {{
        $(
            let made = ($factory)().await;
            let guard = made.1;
            let subject = made.0;
            // Says which check a failure below belongs to.
            eprintln!(concat!("contract: ", stringify!($check)));
            $crate::contract::$suite::$check(&subject).await;
            drop(subject);
            drop(guard);
        )*
    }};
}
