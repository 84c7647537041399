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
/// one state at a time; [`ConnectionState::closing`] or dropping it takes it out.
#[derive(Debug)]
pub(crate) struct ConnectionState<'a> {
    stats: &'a WorkerStats,
    state: State,
    counted: bool,
}

impl<'a> ConnectionState<'a> {
    /// A connection just accepted: active, waiting for its first request.
    pub fn open(stats: &'a WorkerStats) -> ConnectionState<'a> {
        stats.active.increment();
        stats.waiting.increment();
        ConnectionState {
            stats,
            state: State::Waiting,
            counted: true,
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
        if self.counted && self.state != state {
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

    /// The connection is about to close its socket: it leaves the counters first, as nginx
    /// does, so that a client that saw the close and asks `stub_status` at once (perhaps of
    /// another worker) does not find it still counted.
    pub fn closing(&mut self) {
        if std::mem::take(&mut self.counted) {
            self.gauge(self.state).decrement();
            self.stats.active.decrement();
        }
    }
}

impl Drop for ConnectionState<'_> {
    fn drop(&mut self) {
        self.closing();
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

    /// A closing connection leaves the counters before its socket closes, once only.
    #[test]
    fn closing_takes_the_connection_out_once() {
        let stats = WorkerStats::default();
        let mut state = ConnectionState::open(&stats);
        state.reading();
        state.writing();
        state.closing();
        let closed = stats.snapshot();
        assert_eq!((closed.active, closed.writing), (0, 0));
        state.waiting();
        drop(state);
        let after = stats.snapshot();
        assert_eq!(
            (after.active, after.reading, after.writing, after.waiting),
            (0, 0, 0, 0)
        );
    }
}
