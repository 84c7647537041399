//! What a client connection is doing, as `stub_status` counts it: waiting for a request,
//! reading a request head, or writing (from the end of the head until the request is
//! done), with nginx's meanings. The worker's own counters are updated; nothing shared.

use metrics::WorkerStats;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Waiting,
    Reading,
    Writing,
}

/// A connection's place in the counters: it counts as active for its whole life and in
/// one state at a time; dropping it takes it out.
#[derive(Debug)]
pub(crate) struct ConnectionState<'a> {
    stats: &'a WorkerStats,
    state: State,
}

impl<'a> ConnectionState<'a> {
    /// A connection just accepted: active, waiting for its first request.
    pub fn open(stats: &'a WorkerStats) -> ConnectionState<'a> {
        stats.active.increment();
        stats.waiting.increment();
        ConnectionState {
            stats,
            state: State::Waiting,
        }
    }

    fn gauge(&self, state: State) -> &metrics::Gauge {
        match state {
            State::Waiting => &self.stats.waiting,
            State::Reading => &self.stats.reading,
            State::Writing => &self.stats.writing,
        }
    }

    fn enter(&mut self, state: State) {
        if self.state != state {
            self.gauge(self.state).decrement();
            self.gauge(state).increment();
            self.state = state;
        }
    }

    /// The first byte of a request arrived: nginx creates the request then, and counts it.
    pub fn reading(&mut self) {
        if self.state != State::Reading {
            self.stats.requests.add(1);
            self.enter(State::Reading);
        }
    }

    /// The head is read; the request is processed and answered.
    pub fn writing(&mut self) {
        self.enter(State::Writing);
    }

    /// Between keep-alive requests.
    pub fn waiting(&mut self) {
        self.enter(State::Waiting);
    }
}

impl Drop for ConnectionState<'_> {
    fn drop(&mut self) {
        self.gauge(self.state).decrement();
        self.stats.active.decrement();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_move_and_the_connection_leaves_no_trace() {
        let stats = WorkerStats::default();
        {
            let mut state = ConnectionState::open(&stats);
            assert_eq!((stats.active.get(), stats.waiting.get()), (1, 1));
            state.reading();
            state.reading();
            assert_eq!((stats.reading.get(), stats.waiting.get()), (1, 0));
            state.writing();
            assert_eq!((stats.reading.get(), stats.writing.get()), (0, 1));
            state.waiting();
            state.reading();
        }
        let after = stats.snapshot();
        assert_eq!(after.requests, 2);
        assert_eq!(
            (after.active, after.reading, after.writing, after.waiting),
            (0, 0, 0, 0)
        );
    }
}
