//! The admission gate: at most `max_concurrency` generation slots, up to `max_queue` requests
//! waiting for one in order of arrival, and a refusal past that. A waiter asks its caller
//! whether to keep waiting (its client may be gone, its deadline past) and leaves the queue
//! when told not to.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How often a waiting or generating request looks at its client.
pub(crate) const POLL: Duration = Duration::from_millis(100);

/// Generation slots, handed out in order of arrival.
pub(crate) struct Gate {
    pub(crate) slots: usize,
    pub(crate) queue: usize,
    pub(crate) state: Mutex<GateState>,
    pub(crate) changed: Condvar,
}

#[derive(Default)]
pub(crate) struct GateState {
    pub(crate) generating: usize,
    pub(crate) waiting: VecDeque<u64>,
    pub(crate) next_ticket: u64,
}

/// How a request fared at the gate.
pub(crate) enum Admission<'a> {
    /// It may generate while the slot lives.
    Granted(Slot<'a>),
    /// Every slot and queue place is taken.
    Full { generating: usize, queued: usize },
    /// It stopped waiting (its client left, its deadline passed).
    GaveUp,
}

/// A held generation slot; dropping it frees it.
pub(crate) struct Slot<'a> {
    pub(crate) gate: &'a Gate,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut state = self.gate.lock();
        state.generating -= 1;
        drop(state);
        self.gate.changed.notify_all();
    }
}

impl Gate {
    pub(crate) fn new(slots: usize, queue: usize) -> Self {
        Self { slots, queue, state: Mutex::new(GateState::default()), changed: Condvar::new() }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, GateState> {
        // A panic while holding the lock leaves counts that are still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `(generating, queued)` now.
    pub(crate) fn load(&self) -> (usize, usize) {
        let s = self.lock();
        (s.generating, s.waiting.len())
    }

    /// Takes a slot, waiting in line for one while `keep_waiting` (asked every [`POLL`])
    /// says so.
    pub(crate) fn acquire(&self, mut keep_waiting: impl FnMut() -> bool) -> Admission<'_> {
        let mut state = self.lock();
        if state.generating + state.waiting.len() >= self.slots + self.queue {
            return Admission::Full { generating: state.generating, queued: state.waiting.len() };
        }
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.waiting.push_back(ticket);
        loop {
            if state.waiting.front() == Some(&ticket) && state.generating < self.slots {
                state.waiting.pop_front();
                state.generating += 1;
                drop(state);
                // The next in line may have a slot too.
                self.changed.notify_all();
                return Admission::Granted(Slot { gate: self });
            }
            state = self.changed.wait_timeout(state, POLL).unwrap_or_else(|e| e.into_inner()).0;
            drop(state);
            let keep = keep_waiting();
            state = self.lock();
            if !keep {
                state.waiting.retain(|&t| t != ticket);
                drop(state);
                self.changed.notify_all();
                return Admission::GaveUp;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_admits_in_order_queues_and_refuses_past_the_queue() {
        let gate = Gate::new(1, 2);
        let first = match gate.acquire(|| panic!("a free slot is granted at once")) {
            Admission::Granted(s) => s,
            _ => panic!("a free slot"),
        };
        assert_eq!(gate.load(), (1, 0));
        let order = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            let (gate, order) = (&gate, &order);
            let waiter = |name: &'static str| {
                move || {
                    if let Admission::Granted(_slot) = gate.acquire(|| true) {
                        order.lock().unwrap().push(name);
                    }
                }
            };
            s.spawn(waiter("a"));
            while gate.load().1 < 1 {
                std::thread::yield_now();
            }
            s.spawn(waiter("b"));
            while gate.load().1 < 2 {
                std::thread::yield_now();
            }
            // One generating, two waiting: the next is refused.
            assert!(matches!(gate.acquire(|| true), Admission::Full { generating: 1, queued: 2 }));
            drop(first);
        });
        assert_eq!(*order.lock().unwrap(), vec!["a", "b"]);
        assert_eq!(gate.load(), (0, 0));
    }

    #[test]
    fn a_waiter_that_gives_up_leaves_the_queue() {
        let gate = Gate::new(1, 1);
        let held = match gate.acquire(|| true) {
            Admission::Granted(s) => s,
            _ => panic!("a free slot"),
        };
        let mut asked = 0;
        let gave_up = gate.acquire(|| {
            asked += 1;
            asked < 2
        });
        assert!(matches!(gave_up, Admission::GaveUp));
        assert_eq!(gate.load(), (1, 0));
        drop(held);
        assert!(matches!(gate.acquire(|| true), Admission::Granted(_)));
    }
}
