//! Prefix reuse: the keys and values of recent prompts, kept within a memory bound, so a
//! chat's next turn (whose prompt starts with the last one) and chats sharing a system
//! prompt only run their new tokens.
//!
//! Exactness: every answer is the one computed without the cache, bit for bit. So only
//! positions computed from a prompt are reused, never those of generated tokens (a generated
//! token runs alone, with 16-bit activations, where the same token read back in the next
//! prompt runs in a batch with f32 ones); only whole groups of the prompt path's tokens
//! (`llama::reusable_positions`); and at least [`MIN_NEW_TOKENS`] tokens always run.

use crate::llama::{KvCache, Llama, reusable_positions};

/// Tokens a prompt always runs, however much of it is cached: one token alone would run on
/// the generation path, whose numbers differ slightly from the prompt path's.
pub(crate) const MIN_NEW_TOKENS: usize = 2;

/// A prompt's tokens and their keys and values.
struct Saved {
    scope: Option<String>,
    tokens: Vec<u32>,
    cache: KvCache,
    /// When it was last saved or reused (a counter, for least-recently-used eviction).
    used: u64,
}

/// The engine's working sequence (the prompt whose keys and values the model holds) and the
/// saved ones.
pub(crate) struct PrefixCache {
    /// The prompt the model's working cache was computed from, and its request's scope.
    working: Vec<u32>,
    working_scope: Option<String>,
    saved: Vec<Saved>,
    /// The memory the saved sequences may hold; 0 turns reuse off.
    capacity: usize,
    clock: u64,
}

/// What [`PrefixCache::prepare`] decided for a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reuse {
    /// Leading prompt tokens whose keys and values are in the model's cache.
    pub cached: usize,
}

impl PrefixCache {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            working: Vec::new(),
            working_scope: None,
            saved: Vec::new(),
            capacity,
            clock: 0,
        }
    }

    /// Memory the saved sequences hold.
    pub(crate) fn bytes(&self) -> usize {
        self.saved.iter().map(|saved| saved.cache.bytes()).sum()
    }

    /// Sequences saved (not counting the working one).
    #[cfg(test)]
    pub(crate) fn saved(&self) -> usize {
        self.saved.len()
    }

    /// Gives the model the cache of `scope` (`ChatRequest::cache_scope`: prompts of other
    /// scopes are never reused) that shares the longest prefix with `prompt`, and says how
    /// many of its tokens need not run. The working sequence, when the prompt leaves it, is
    /// saved first (so another chat's next turn finds it), evicting the least recently used
    /// sequences beyond the memory bound.
    pub(crate) fn prepare(
        &mut self,
        model: &mut Llama,
        scope: Option<&str>,
        prompt: &[u32],
    ) -> Result<Reuse, String> {
        if self.capacity == 0 {
            return Ok(Reuse { cached: 0 });
        }
        self.clock += 1;
        let reusable = |shared: usize| {
            reusable_positions(shared.min(prompt.len().saturating_sub(MIN_NEW_TOKENS)))
        };
        let same_scope = self.working_scope.as_deref() == scope;
        let working = if same_scope {
            common_prefix(&self.working, prompt)
        } else {
            0
        };
        if working < self.working.len() {
            // The prompt leaves the working sequence: keep it, then take the best saved one
            // (possibly itself).
            let tokens = std::mem::take(&mut self.working);
            let mut cache = model.take_cache();
            cache.truncate(tokens.len());
            cache.shrink_to_fit();
            let working_scope = self.working_scope.take();
            self.save(working_scope, tokens, cache);
            if let Some(best) = self.best(scope, prompt) {
                let shared = reusable(common_prefix(&self.saved[best].tokens, prompt));
                let saved = &mut self.saved[best];
                saved.used = self.clock;
                model.set_cache(saved.cache.prefix(shared))?;
                self.working = prompt[..shared].to_vec();
            }
        }
        let cached = reusable(common_prefix(&self.working, prompt));
        self.working = prompt.to_vec();
        self.working_scope = scope.map(str::to_owned);
        Ok(Reuse { cached })
    }

    /// Forgets what the working cache holds (after a forward pass failed midway): the next
    /// prompt runs whole.
    pub(crate) fn forget_working(&mut self) {
        self.working.clear();
    }

    /// The saved sequence of `scope` sharing the longest (non-empty) prefix with `prompt`,
    /// the most recently used among equals.
    fn best(&self, scope: Option<&str>, prompt: &[u32]) -> Option<usize> {
        self.saved
            .iter()
            .enumerate()
            .filter(|(_, saved)| saved.scope.as_deref() == scope)
            .map(|(i, saved)| (common_prefix(&saved.tokens, prompt), saved.used, i))
            .filter(|(shared, _, _)| *shared > 0)
            .max()
            .map(|(_, _, i)| i)
    }

    /// Keeps a sequence: one that another saved sequence starts with adds nothing; saved
    /// ones it starts with are replaced; the least recently used go while over the bound.
    fn save(&mut self, scope: Option<String>, tokens: Vec<u32>, cache: KvCache) {
        if tokens.is_empty() || cache.bytes() > self.capacity {
            return;
        }
        if let Some(longer) = self
            .saved
            .iter_mut()
            .find(|saved| saved.scope == scope && saved.tokens.starts_with(&tokens))
        {
            longer.used = self.clock;
            return;
        }
        self.saved
            .retain(|saved| saved.scope != scope || !tokens.starts_with(&saved.tokens));
        self.saved.push(Saved {
            scope,
            tokens,
            cache,
            used: self.clock,
        });
        while self.bytes() > self.capacity {
            let Some(oldest) = self
                .saved
                .iter()
                .enumerate()
                .min_by_key(|(_, saved)| saved.used)
                .map(|(i, _)| i)
            else {
                break;
            };
            self.saved.swap_remove(oldest);
        }
    }
}

/// How many leading tokens two sequences share.
fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::{KvCache, PrefixCache, common_prefix};

    /// 2 layers × 4 values × keys and values × 4 bytes: 64 bytes a position.
    fn cache(positions: usize) -> KvCache {
        KvCache::zeros(2, 4, positions)
    }

    fn save(prefixes: &mut PrefixCache, tokens: &[u32]) {
        save_in(prefixes, "org_a", tokens);
    }

    fn save_in(prefixes: &mut PrefixCache, scope: &str, tokens: &[u32]) {
        prefixes.clock += 1;
        prefixes.save(Some(scope.into()), tokens.to_vec(), cache(tokens.len()));
    }

    fn saved(prefixes: &PrefixCache) -> Vec<Vec<u32>> {
        let mut tokens: Vec<_> = prefixes.saved.iter().map(|s| s.tokens.clone()).collect();
        tokens.sort();
        tokens
    }

    #[test]
    fn common_prefixes() {
        assert_eq!(common_prefix(&[1, 2, 3], &[1, 2, 4]), 2);
        assert_eq!(common_prefix(&[1, 2], &[1, 2, 3]), 2);
        assert_eq!(common_prefix(&[], &[1]), 0);
        assert_eq!(common_prefix(&[5], &[1]), 0);
    }

    #[test]
    fn cache_prefixes_and_truncation_keep_whole_positions() {
        let mut kv = cache(10);
        assert_eq!((kv.positions(), kv.bytes()), (10, 640));
        let prefix = kv.prefix(4);
        assert_eq!((prefix.positions(), prefix.bytes()), (4, 256));
        assert_eq!(kv.prefix(99).positions(), 10);
        // Cut back, a cache keeps its allocation until it is shrunk.
        kv.truncate(3);
        assert_eq!((kv.positions(), kv.bytes()), (3, 640));
        kv.shrink_to_fit();
        assert!((192..640).contains(&kv.bytes()), "{}", kv.bytes());
        kv.truncate(7);
        assert_eq!(kv.positions(), 3);
    }

    #[test]
    fn a_sequence_replaces_its_prefixes_and_a_prefix_adds_nothing() {
        let mut prefixes = PrefixCache::new(1 << 20);
        save(&mut prefixes, &[1, 2]);
        save(&mut prefixes, &[1, 2, 3, 4]);
        assert_eq!(saved(&prefixes), vec![vec![1, 2, 3, 4]]);
        save(&mut prefixes, &[1, 2, 3]);
        assert_eq!(saved(&prefixes), vec![vec![1, 2, 3, 4]]);
        save(&mut prefixes, &[1, 5]);
        assert_eq!(saved(&prefixes), vec![vec![1, 2, 3, 4], vec![1, 5]]);
        assert_eq!(prefixes.bytes(), 6 * 64);
        // The longest shared prefix wins; nothing shared finds nothing.
        let best = |prefixes: &PrefixCache, scope, prompt: &[u32]| {
            prefixes
                .best(Some(scope), prompt)
                .map(|i| prefixes.saved[i].tokens.clone())
        };
        assert_eq!(
            best(&prefixes, "org_a", &[1, 2, 3, 9]),
            Some(vec![1, 2, 3, 4])
        );
        assert_eq!(best(&prefixes, "org_a", &[7, 1, 2]), None);
        // Another scope's prompts are never found, and never replace or hide its own.
        assert_eq!(best(&prefixes, "org_b", &[1, 2, 3, 9]), None);
        save_in(&mut prefixes, "org_b", &[1, 2]);
        save_in(&mut prefixes, "org_b", &[1, 2, 3, 4, 5]);
        assert_eq!(
            best(&prefixes, "org_b", &[1, 2, 3, 9]),
            Some(vec![1, 2, 3, 4, 5])
        );
        assert_eq!(
            best(&prefixes, "org_a", &[1, 2, 3, 4, 5]),
            Some(vec![1, 2, 3, 4])
        );
        assert_eq!(prefixes.saved(), 3);
        assert_eq!(prefixes.best(None, &[1, 2, 3]), None);
    }

    #[test]
    fn the_least_recently_used_go_beyond_the_bound() {
        // Room for 10 positions.
        let mut prefixes = PrefixCache::new(640);
        save(&mut prefixes, &[1, 1, 1, 1]);
        save(&mut prefixes, &[2, 2, 2, 2]);
        // Reusing the first makes the second the oldest.
        prefixes.clock += 1;
        prefixes.saved[0].used = prefixes.clock;
        save(&mut prefixes, &[3, 3, 3, 3]);
        assert_eq!(saved(&prefixes), vec![vec![1, 1, 1, 1], vec![3, 3, 3, 3]]);
        assert!(prefixes.bytes() <= 640);
        // One larger than the whole bound is not kept, and evicts nothing.
        save(&mut prefixes, &[4; 11]);
        assert_eq!(prefixes.saved(), 2);
        // Off: nothing is kept.
        let mut off = PrefixCache::new(0);
        save(&mut off, &[1, 2]);
        assert_eq!(off.saved(), 0);
    }
}
