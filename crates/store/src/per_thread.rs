//! Values made once per thread that uses them. A store's batching tasks and their
//! connections run on the runtime of the thread whose requests they serve: an actix worker
//! is a single-threaded runtime, so a request, its batch's task and the connection's I/O
//! then run on one thread, and handing a write to the batch and its answer back costs no
//! wake-up of another thread (measured as a large share of a completion's CPU when every
//! batch ran on the main thread).

use std::{
    sync::{Arc, Mutex},
    thread::ThreadId,
};

/// Whether a per-thread value can still serve (its tasks' runtime may have shut down).
pub(crate) trait Running {
    fn running(&self) -> bool;
}

/// One `T` per thread, made on first use on that thread.
pub(crate) struct PerThread<T> {
    make: Box<dyn Fn() -> Option<T> + Send + Sync>,
    made: Mutex<Vec<(ThreadId, Arc<T>)>>,
}

impl<T: Running> PerThread<T> {
    /// `make` is called on the thread the value is for; it returns `None` when that thread
    /// cannot host it (no Tokio runtime).
    pub(crate) fn new(make: impl Fn() -> Option<T> + Send + Sync + 'static) -> Self {
        Self {
            make: Box::new(make),
            made: Mutex::new(Vec::new()),
        }
    }

    /// This thread's value, made now if it has none (or its previous one stopped running).
    pub(crate) fn get(&self) -> Option<Arc<T>> {
        let thread = std::thread::current().id();
        let mut made = self
            .made
            .lock()
            // Updates are single pushes and removals: a panic elsewhere leaves it consistent.
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        made.retain(|(_, value)| value.running());
        if let Some((_, value)) = made.iter().find(|(owner, _)| *owner == thread) {
            return Some(Arc::clone(value));
        }
        let value = Arc::new((self.make)()?);
        made.push((thread, Arc::clone(&value)));
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::*;

    struct Made {
        running: Arc<AtomicBool>,
    }

    impl Running for Made {
        fn running(&self) -> bool {
            self.running.load(Ordering::SeqCst)
        }
    }

    fn counting(running: Arc<AtomicBool>) -> (PerThread<Made>, Arc<AtomicUsize>) {
        let count = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&count);
        let values = PerThread::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            Some(Made {
                running: Arc::clone(&running),
            })
        });
        (values, count)
    }

    #[test]
    fn each_thread_gets_its_own_value_made_once() {
        let (values, count) = counting(Arc::new(AtomicBool::new(true)));
        let here = values.get().expect("made");
        assert!(Arc::ptr_eq(&here, &values.get().expect("kept")));
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let there = values.get().expect("made");
                assert!(!Arc::ptr_eq(&here, &there));
            });
        });
        assert_eq!(count.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_value_that_stopped_running_is_replaced() {
        let running = Arc::new(AtomicBool::new(true));
        let (values, count) = counting(Arc::clone(&running));
        values.get().expect("made");
        running.store(false, Ordering::SeqCst);
        values.get().expect("made again");
        assert_eq!(count.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_thread_that_cannot_host_one_gets_none() {
        let values: PerThread<Made> = PerThread::new(|| None);
        assert!(values.get().is_none());
    }
}
