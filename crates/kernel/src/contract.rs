//! The one way a port's contract suite becomes tests: each domain crate's `contract`
//! feature has `pub async fn` checks and a `<port>_contract!` macro that lists them once and
//! hands them to [`contract_checks!`](crate::contract_checks).

/// Expands each named check `$krate::contract::$check(&stores)` into a
/// `#[tokio::test]` of the calling crate (which needs tokio), on fresh stores from
/// `$factory`: an expression that, called with no argument, gives a future of
/// `(stores, guard)`; the guard (e.g. a throwaway database) lives until the check ends.
/// `$krate` is the domain crate's `$crate`.
#[macro_export]
macro_rules! contract_checks {
    ($factory:expr, $krate:tt; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                let (stores, guard) = ($factory)().await;
                $krate::contract::$check(&stores).await;
                drop(guard);
            }
        )*
    };
}
