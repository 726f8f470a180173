//! Several KV caches ("slots") for the server, so that alternating conversations do not evict
//! each other's history: each request goes to the slot that already holds most of its prompt.
//!
//! Why: with one cache, a request from conversation B cuts A's cache back to what they share
//! (the template's opening, a common system prompt) and A's next turn pays its whole history
//! again. With N slots N conversations stay warm. A compressed cache makes that cheaper: at
//! the same memory a turbo4 cache holds ~3.3x the positions of an fp16 one (Llama-3-8B shapes,
//! boundary layers included: `mlxcel recommend-quant`). An empty slot holds no cache memory.

use mlxcel_models::generate::KvContext;

/// How a request's slot is chosen: the slot whose cached tokens share the longest prefix with
/// the prompt, if that prefix is at least 90% of what the slot holds (the slot's conversation
/// continues here: the next turn re-renders the last reply, whose final tokens may differ
/// from the generated ones); otherwise an empty slot, or else the one used least recently (cut
/// back to what it shares with the prompt). The 90% rule keeps a shared system prompt from
/// pulling every new conversation into the same slot and cutting away its history.
pub fn pick(held: &[&[u32]], last_used: &[u64], prompt: &[u32]) -> usize {
    let shared = |t: &[u32]| t.iter().zip(prompt).take_while(|(a, b)| a == b).count();
    let best = (0..held.len())
        .filter(|&i| !held[i].is_empty())
        .map(|i| (shared(held[i]), i))
        .max_by_key(|&(n, i)| (n, last_used[i]));
    if let Some((n, i)) = best {
        if n > 0 && 10 * n >= 9 * held[i].len() {
            return i;
        }
    }
    if let Some(i) = (0..held.len()).find(|&i| held[i].is_empty()) {
        return i;
    }
    (0..held.len())
        .min_by_key(|&i| last_used[i])
        .expect("at least one slot")
}

/// The server's caches and when each was last used.
pub struct Slots {
    contexts: Vec<KvContext>,
    last_used: Vec<u64>,
    clock: u64,
}

impl Slots {
    pub fn new(contexts: Vec<KvContext>) -> Slots {
        assert!(!contexts.is_empty(), "at least one slot");
        let n = contexts.len();
        Slots {
            contexts,
            last_used: vec![0; n],
            clock: 0,
        }
    }

    /// The slot for `prompt` ([`pick`]), marked as used now, and its index.
    pub fn take(&mut self, prompt: &[u32]) -> (usize, &mut KvContext) {
        let held: Vec<&[u32]> = self.contexts.iter().map(|c| c.tokens()).collect();
        let i = pick(&held, &self.last_used, prompt);
        self.clock += 1;
        self.last_used[i] = self.clock;
        (i, &mut self.contexts[i])
    }

    pub fn len(&self) -> usize {
        self.contexts.len()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut KvContext> {
        self.contexts.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::pick;

    #[test]
    fn a_continued_conversation_finds_its_slot_and_new_ones_take_free_or_old_slots() {
        // Three conversations opening with the same 20 tokens (a system prompt).
        let system: Vec<u32> = (1..=20).collect();
        let a: Vec<u32> = [&system[..], &[100; 20]].concat();
        let b: Vec<u32> = [&system[..], &[200; 20]].concat();
        // A's next turn: its last cached token re-rendered differently, then new ones.
        let a_next: Vec<u32> = [&a[..39], &[101, 102, 103]].concat();
        let c: Vec<u32> = [&system[..], &[300; 5]].concat();
        // A's next turn goes to A's slot, whichever is newer.
        assert_eq!(pick(&[&a, &b], &[1, 2], &a_next), 0);
        assert_eq!(pick(&[&b, &a], &[2, 1], &a_next), 1);
        // A new conversation sharing only the opening takes the empty slot...
        assert_eq!(pick(&[&a, &[]], &[1, 0], &c), 1);
        // ...or, with none empty, the least recently used one.
        assert_eq!(pick(&[&a, &b], &[5, 3], &c), 1);
        assert_eq!(pick(&[&a, &b], &[3, 5], &c), 0);
        // One slot: always it.
        assert_eq!(pick(&[&a], &[1], &c), 0);
        // Empty slots only: the first.
        assert_eq!(pick(&[&[], &[]], &[0, 0], &c), 0);
    }
}
