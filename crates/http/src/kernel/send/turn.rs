//! How long a connection sending a body may keep its worker before the others get a turn.

use std::time::{Duration, Instant};

/// A connection that has held its worker this long since its turn began lets the worker's
/// other connections run before its next piece. A piece that page cache holds takes tens
/// of microseconds, so a response from memory goes out in a few turns; a piece that waited
/// for the disk (`aio off`) always ends the turn, so a slow disk holds the loop for one
/// piece, never for a whole file. Longer turns finish cached responses sooner and make
/// every other connection wait longer for its next turn: with 1 ms, 35 busy connections on
/// a worker kept its loop from its timers for 10 ms or more hundreds of times a run.
/// nginx delays the write event by 1 ms after every `sendfile_max_chunk` bytes instead.
pub(crate) const TURN_MAX: Duration = Duration::from_micros(250);

/// The current turn of one connection's body.
#[derive(Debug)]
pub(crate) struct Turn {
    started: Instant,
    length: Duration,
}

impl Turn {
    pub fn new() -> Turn {
        Turn::lasting(TURN_MAX)
    }

    fn lasting(length: Duration) -> Turn {
        Turn {
            started: Instant::now(),
            length,
        }
    }

    /// Starts a new turn: the connection just waited (for the socket, or for the pool),
    /// so the others ran meanwhile.
    pub(crate) fn restart(&mut self) {
        self.started = Instant::now();
    }

    /// After a piece: yields to the worker's other tasks if the turn is over. A yield
    /// costs no idle time when nobody else is waiting.
    pub(crate) async fn after_piece(&mut self) {
        if self.started.elapsed() >= self.length {
            tokio::task::yield_now().await;
            self.restart();
        }
    }
}

impl Default for Turn {
    fn default() -> Turn {
        Turn::new()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use super::*;

    /// Pieces within the turn keep the worker; the piece that ends the turn lets the
    /// other task run before the next one.
    #[test]
    fn the_others_run_once_the_turn_is_over() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        tokio::task::LocalSet::new().block_on(&runtime, async {
            let other_ran = Rc::new(Cell::new(false));
            tokio::task::spawn_local({
                let other_ran = Rc::clone(&other_ran);
                async move { other_ran.set(true) }
            });
            // A turn no test machine can outlast, however loaded.
            let mut turn = Turn::lasting(Duration::from_secs(3600));
            for _ in 0..100 {
                turn.after_piece().await;
            }
            assert!(!other_ran.get(), "short pieces keep the turn");
            turn.length = Duration::from_millis(1);
            let started = Instant::now();
            while started.elapsed() < turn.length {
                std::hint::spin_loop();
            }
            turn.after_piece().await;
            assert!(other_ran.get(), "the turn was over");
        });
    }
}
