//! Values made once per thread that uses them. Adapters keep a value per thread when it
//! owns tasks or connections bound to the runtime that made them (a batching task, an HTTP
//! client's pool): a service whose workers are single-threaded runtimes then handles a
//! request, its task and its connection's I/O on one thread, and waking another thread to
//! hand work over and back costs nothing.

use std::{
    fmt,
    sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard},
    thread::{self, ThreadId},
};

/// More threads than a service has: past this, every entry is dropped (live threads make
/// theirs again), so values of threads that have ended are not kept forever. Four per core,
/// and at least 64: a service's HTTP workers and runtime threads (about two per core) stay
/// under it, so live threads' values are not dropped and remade over and over.
fn default_most_threads() -> usize {
    let cores = thread::available_parallelism().map_or(1, usize::from);
    cores.saturating_mul(4).max(64)
}

type Make<T, E> = Box<dyn Fn() -> Result<T, E> + Send + Sync>;

/// One `T` per thread, made on that thread when it first asks for one.
pub struct PerThread<T, E> {
    make: Make<T, E>,
    usable: fn(&T) -> bool,
    most_threads: usize,
    made: RwLock<Vec<(ThreadId, Arc<T>)>>,
}

impl<T, E> PerThread<T, E> {
    /// `make` runs on the thread the value is for, and may refuse (e.g. outside a runtime).
    pub fn new(make: impl Fn() -> Result<T, E> + Send + Sync + 'static) -> Self {
        Self {
            make: Box::new(make),
            usable: |_| true,
            most_threads: default_most_threads(),
            made: RwLock::new(Vec::new()),
        }
    }

    /// A value that `usable` rejects (say, its runtime has shut down) is replaced by a new one.
    #[must_use]
    pub fn replacing_unless(mut self, usable: fn(&T) -> bool) -> Self {
        self.usable = usable;
        self
    }

    /// Keeps at most this many threads' values (at least one).
    #[must_use]
    pub fn keeping_at_most(mut self, threads: usize) -> Self {
        self.most_threads = threads.max(1);
        self
    }

    /// This thread's value, made now if it has none or its value is no longer usable.
    ///
    /// # Errors
    /// What `make` returned when it refused.
    pub fn get(&self) -> Result<Arc<T>, E> {
        let thread = thread::current().id();
        // The hot path: a shared lock and one short search of a few entries.
        if let Some((_, value)) = self.read().iter().find(|(owner, _)| *owner == thread)
            && (self.usable)(value)
        {
            return Ok(Arc::clone(value));
        }
        // Made outside the lock: a slow `make` (an HTTP client's TLS set-up) holds up no
        // other thread. Only this thread adds this thread's entry, so there is no race.
        let value = Arc::new((self.make)()?);
        let mut made = self.write();
        made.retain(|(owner, value)| *owner != thread && (self.usable)(value));
        if made.len() >= self.most_threads {
            made.clear();
        }
        made.push((thread, Arc::clone(&value)));
        Ok(value)
    }

    /// How many threads have a value now.
    pub fn threads(&self) -> usize {
        self.read().len()
    }

    // Updates are single pushes, removals and clears, and nothing else runs under the lock:
    // a panic cannot leave the list inconsistent, so a poisoned lock is used as it is.
    fn read(&self) -> RwLockReadGuard<'_, Vec<(ThreadId, Arc<T>)>> {
        self.made
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Vec<(ThreadId, Arc<T>)>> {
        self.made
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl<T, E> fmt::Debug for PerThread<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerThread")
            .field("threads", &self.threads())
            .field("most_threads", &self.most_threads)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::{
        convert::Infallible,
        sync::{
            Mutex,
            atomic::{AtomicBool, AtomicUsize, Ordering},
        },
    };

    use super::*;

    struct Made {
        usable: Arc<AtomicBool>,
    }

    fn counting(usable: Arc<AtomicBool>) -> (PerThread<Made, Infallible>, Arc<AtomicUsize>) {
        let count = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&count);
        let values = PerThread::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok(Made {
                usable: Arc::clone(&usable),
            })
        })
        .replacing_unless(|made| made.usable.load(Ordering::SeqCst));
        (values, count)
    }

    fn on_another_thread<T: Send>(run: impl FnOnce() -> T + Send) -> T {
        thread::scope(|scope| scope.spawn(run).join().expect("thread ran"))
    }

    #[test]
    fn each_thread_gets_its_own_value_made_once() {
        let (values, count) = counting(Arc::new(AtomicBool::new(true)));
        let here = values.get().unwrap();
        assert!(Arc::ptr_eq(&here, &values.get().unwrap()));
        let there = on_another_thread(|| values.get().unwrap());
        assert!(!Arc::ptr_eq(&here, &there));
        assert_eq!(count.load(Ordering::SeqCst), 2);
        assert_eq!(values.threads(), 2);
    }

    #[test]
    fn a_value_no_longer_usable_is_replaced_and_others_like_it_dropped() {
        let usable = Arc::new(AtomicBool::new(true));
        let (values, count) = counting(Arc::clone(&usable));
        values.get().unwrap();
        on_another_thread(|| values.get().unwrap());
        usable.store(false, Ordering::SeqCst);
        values.get().unwrap();
        assert_eq!(count.load(Ordering::SeqCst), 3);
        assert_eq!(
            values.threads(),
            1,
            "the other thread's unusable value is gone"
        );
    }

    #[test]
    fn a_value_being_made_holds_up_no_other_thread() {
        let (entered, inside) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let released = Mutex::new(released);
        let first = AtomicBool::new(true);
        let values = PerThread::new(move || {
            if first.swap(false, Ordering::SeqCst) {
                return Ok(0);
            }
            // The second thread's value: made only once the first thread got its own.
            entered.send(()).map_err(|_| "no test")?;
            let waited = released.lock().map_err(|_| "poisoned")?;
            waited
                .recv_timeout(std::time::Duration::from_secs(10))
                .map(|()| 1)
                .map_err(|_| "held up")
        });
        assert_eq!(*values.get().unwrap(), 0);
        thread::scope(|scope| {
            let second = scope.spawn(|| values.get().map(|value| *value));
            inside.recv().unwrap();
            assert_eq!(*values.get().unwrap(), 0, "served while the other waits");
            release.send(()).unwrap();
            assert_eq!(second.join().unwrap(), Ok(1));
        });
    }

    #[test]
    fn the_default_keeps_more_threads_than_a_service_runs() {
        let cores = thread::available_parallelism().map_or(1, usize::from);
        let values = PerThread::<u8, Infallible>::new(|| Ok(0));
        assert!(values.most_threads >= 64);
        assert!(values.most_threads >= 4 * cores);
    }

    #[test]
    fn values_of_many_threads_are_dropped_rather_than_kept_forever() {
        let values = PerThread::<u8, Infallible>::new(|| Ok(0)).keeping_at_most(4);
        for _ in 0..7 {
            on_another_thread(|| values.get().unwrap());
        }
        assert!(values.threads() <= 4);
    }

    #[test]
    fn a_thread_that_cannot_host_one_gets_the_refusal_and_can_ask_again() {
        let refuse = Arc::new(AtomicBool::new(true));
        let refusing = Arc::clone(&refuse);
        let values = PerThread::new(move || {
            if refusing.load(Ordering::SeqCst) {
                Err("no runtime")
            } else {
                Ok(1)
            }
        });
        assert_eq!(values.get().unwrap_err(), "no runtime");
        assert_eq!(values.threads(), 0);
        refuse.store(false, Ordering::SeqCst);
        assert_eq!(*values.get().unwrap(), 1);
    }
}
