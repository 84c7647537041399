//! `proxy_next_upstream`: after each try, whether the response goes to the client, the
//! next server is tried, or the request ends with the failure's status. One pure
//! function decides, for a response head and for a failure alike.

use std::time::{Duration, Instant};

use crate::modules::proxy::NextUpstream;
use crate::modules::proxy::failure::Failure;

/// What the decision depends on, fixed for the request before its first try.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Policy {
    /// `proxy_next_upstream`.
    pub conditions: NextUpstream,
    /// How many tries the request may make: the group's servers, at most
    /// `proxy_next_upstream_tries` when it is not 0.
    pub tries: usize,
    /// `proxy_next_upstream_timeout`; zero is no limit.
    pub timeout: Duration,
    /// When the first try started.
    pub started: Instant,
    /// The method may be repeated once the request was sent (not POST, LOCK, PATCH).
    pub idempotent: bool,
    /// The body is passed on as it arrives: once sent it cannot be sent again.
    pub streamed_body: bool,
}

impl Policy {
    /// A request that may make at most `group_tries` tries (1 for a group of one server).
    pub fn new(
        conditions: NextUpstream,
        group_tries: usize,
        tries_max: u64,
        timeout: Duration,
        started: Instant,
    ) -> Policy {
        let tries = if tries_max > 0 {
            group_tries.min(usize::try_from(tries_max).unwrap_or(usize::MAX))
        } else {
            group_tries
        };
        Policy {
            conditions,
            tries,
            timeout,
            started,
            idempotent: true,
            streamed_body: false,
        }
    }
}

/// How a try ended.
#[derive(Clone, Copy, Debug)]
pub enum Outcome<'f> {
    /// A response head with this status arrived.
    Response(u16),
    Failed(&'f Failure),
}

/// What to do after a try.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Pass the response on.
    Respond,
    /// Try the next server.
    Retry,
    /// End the request with this status.
    Finalize(u16),
}

/// What follows try number `tries` (1 for the first) that ended with `outcome`, at `now`.
pub fn decide(policy: &Policy, outcome: Outcome<'_>, tries: usize, now: Instant) -> Next {
    debug_assert!(tries >= 1);
    let (condition, sent, stop) = match outcome {
        Outcome::Response(status) => match NextUpstream::for_status(status) {
            Some(condition) => (condition, true, Next::Respond),
            None => return Next::Respond,
        },
        Outcome::Failed(failure) => {
            let stop = Next::Finalize(failure.status());
            // The client's own failures end the request: no server is to blame.
            let Some(condition) = failure.condition() else {
                return stop;
            };
            if policy.streamed_body && failure.sent {
                return stop;
            }
            (condition, failure.sent, stop)
        }
    };
    let conditions = policy.conditions;
    if !conditions.has(condition) || conditions.has(NextUpstream::OFF) {
        return stop;
    }
    if sent && !policy.idempotent && !conditions.has(NextUpstream::NON_IDEMPOTENT) {
        return stop;
    }
    if tries >= policy.tries {
        return stop;
    }
    let elapsed = now.saturating_duration_since(policy.started);
    if !policy.timeout.is_zero() && elapsed >= policy.timeout {
        return stop;
    }
    Next::Retry
}

/// Whether a response that is not passed on counts against its server (`max_fails`):
/// server errors and 429 do, 403 and 404 do not.
pub(crate) fn status_counts_against_peer(status: u16) -> bool {
    matches!(status, 500 | 502 | 503 | 504 | 429)
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;
    use crate::modules::proxy::failure::{Action, Fault};

    const DEFAULT: u16 = NextUpstream::ERROR | NextUpstream::TIMEOUT;

    /// How a test try ends.
    enum Ends {
        Response(u16),
        Failed(Fault, bool),
    }

    struct Case {
        name: &'static str,
        conditions: u16,
        idempotent: bool,
        streamed_body: bool,
        ends: Ends,
        /// The try's number, of 3 allowed.
        tries: usize,
        /// Since the first try, with `proxy_next_upstream_timeout 10s`.
        elapsed_seconds: u64,
        next: Next,
    }

    fn case(name: &'static str, conditions: u16, ends: Ends, next: Next) -> Case {
        Case {
            name,
            conditions,
            idempotent: true,
            streamed_body: false,
            ends,
            tries: 1,
            elapsed_seconds: 0,
            next,
        }
    }

    fn io_error() -> Fault {
        Fault::Io(io::Error::from_raw_os_error(111))
    }

    fn cases() -> Vec<Case> {
        use Ends::{Failed, Response};
        use Next::{Finalize, Respond, Retry};
        let http_5xx = DEFAULT | NextUpstream::HTTP_502 | NextUpstream::HTTP_503;
        vec![
            case("200 is passed on", http_5xx, Response(200), Respond),
            case(
                "a 502 not listed is passed on",
                DEFAULT,
                Response(502),
                Respond,
            ),
            case(
                "a listed 502 tries the next",
                http_5xx,
                Response(502),
                Retry,
            ),
            case("a listed 404", NextUpstream::HTTP_404, Response(404), Retry),
            case("a listed 429", NextUpstream::HTTP_429, Response(429), Retry),
            Case {
                tries: 3,
                ..case(
                    "a 502 on the last try is passed on",
                    http_5xx,
                    Response(502),
                    Respond,
                )
            },
            Case {
                idempotent: false,
                ..case(
                    "a POST's 502 is passed on",
                    http_5xx,
                    Response(502),
                    Respond,
                )
            },
            Case {
                idempotent: false,
                ..case(
                    "a POST's 502 with non_idempotent",
                    http_5xx | NextUpstream::NON_IDEMPOTENT,
                    Response(502),
                    Retry,
                )
            },
            Case {
                elapsed_seconds: 10,
                ..case(
                    "a 502 after the timeout is passed on",
                    http_5xx,
                    Response(502),
                    Respond,
                )
            },
            Case {
                elapsed_seconds: 9,
                ..case("a 502 before the timeout", http_5xx, Response(502), Retry)
            },
            case(
                "error tries the next",
                DEFAULT,
                Failed(io_error(), false),
                Retry,
            ),
            case(
                "timeout tries the next",
                DEFAULT,
                Failed(Fault::TimedOut, true),
                Retry,
            ),
            case(
                "timeout not listed",
                NextUpstream::ERROR,
                Failed(Fault::TimedOut, true),
                Finalize(504),
            ),
            case(
                "error not listed",
                NextUpstream::TIMEOUT,
                Failed(Fault::Closed, true),
                Finalize(502),
            ),
            case(
                "invalid header not listed",
                DEFAULT,
                Failed(Fault::HeadTooBig, true),
                Finalize(502),
            ),
            case(
                "invalid header listed",
                NextUpstream::INVALID_HEADER,
                Failed(Fault::HeadTooBig, true),
                Retry,
            ),
            case(
                "off",
                NextUpstream::OFF,
                Failed(io_error(), false),
                Finalize(502),
            ),
            case(
                "off wins over error",
                NextUpstream::OFF | DEFAULT,
                Failed(io_error(), false),
                Finalize(502),
            ),
            Case {
                tries: 3,
                ..case(
                    "error on the last try",
                    DEFAULT,
                    Failed(io_error(), false),
                    Finalize(502),
                )
            },
            Case {
                tries: 2,
                ..case(
                    "error on a middle try",
                    DEFAULT,
                    Failed(io_error(), false),
                    Retry,
                )
            },
            Case {
                elapsed_seconds: 10,
                ..case(
                    "error after the timeout",
                    DEFAULT,
                    Failed(io_error(), false),
                    Finalize(502),
                )
            },
            Case {
                idempotent: false,
                ..case(
                    "a POST not sent yet",
                    DEFAULT,
                    Failed(io_error(), false),
                    Retry,
                )
            },
            Case {
                idempotent: false,
                ..case(
                    "a POST sent",
                    DEFAULT,
                    Failed(Fault::TimedOut, true),
                    Finalize(504),
                )
            },
            Case {
                idempotent: false,
                ..case(
                    "a POST sent, non_idempotent",
                    DEFAULT | NextUpstream::NON_IDEMPOTENT,
                    Failed(Fault::TimedOut, true),
                    Retry,
                )
            },
            Case {
                streamed_body: true,
                ..case(
                    "a streamed body not sent",
                    DEFAULT,
                    Failed(io_error(), false),
                    Retry,
                )
            },
            Case {
                streamed_body: true,
                ..case(
                    "a streamed body sent",
                    DEFAULT | NextUpstream::NON_IDEMPOTENT,
                    Failed(io_error(), true),
                    Finalize(502),
                )
            },
            case(
                "client closed",
                DEFAULT,
                Failed(Fault::ClientClosed, true),
                Finalize(499),
            ),
            case(
                "client gone",
                DEFAULT,
                Failed(Fault::ClientAborted, true),
                Finalize(499),
            ),
            case(
                "client timed out",
                DEFAULT,
                Failed(Fault::ClientTimedOut, true),
                Finalize(408),
            ),
            case(
                "client sent a bad body",
                DEFAULT,
                Failed(Fault::ClientInvalidBody, true),
                Finalize(400),
            ),
        ]
    }

    #[test]
    fn decide_follows_proxy_next_upstream() {
        let started = Instant::now();
        for case in cases() {
            let policy = Policy {
                idempotent: case.idempotent,
                streamed_body: case.streamed_body,
                ..Policy::new(
                    NextUpstream(case.conditions),
                    3,
                    0,
                    Duration::from_secs(10),
                    started,
                )
            };
            let failure;
            let outcome = match case.ends {
                Ends::Response(status) => Outcome::Response(status),
                Ends::Failed(fault, sent) => {
                    failure = Failure {
                        fault,
                        action: Action::ReadingHead,
                        sent,
                        reused: false,
                        head_started: false,
                    };
                    Outcome::Failed(&failure)
                }
            };
            let now = started + Duration::from_secs(case.elapsed_seconds);
            assert_eq!(
                decide(&policy, outcome, case.tries, now),
                case.next,
                "{}",
                case.name
            );
        }
    }

    #[test]
    fn no_timeout_is_no_limit() {
        let started = Instant::now();
        let policy = Policy::new(NextUpstream(DEFAULT), 2, 0, Duration::ZERO, started);
        let failure = Failure::upstream(Fault::Closed, Action::ReadingHead, true);
        let later = started + Duration::from_secs(3600);
        let next = decide(&policy, Outcome::Failed(&failure), 1, later);
        assert_eq!(next, Next::Retry);
    }

    #[test]
    fn tries_are_the_group_bounded_by_next_upstream_tries() {
        let started = Instant::now();
        let tries = |group, tries_max| {
            Policy::new(
                NextUpstream(DEFAULT),
                group,
                tries_max,
                Duration::ZERO,
                started,
            )
            .tries
        };
        assert_eq!(tries(1, 0), 1);
        assert_eq!(tries(4, 0), 4);
        assert_eq!(tries(4, 2), 2);
        assert_eq!(tries(2, 5), 2);
    }

    #[test]
    fn server_errors_count_against_the_peer() {
        for status in [500, 502, 503, 504, 429] {
            assert!(status_counts_against_peer(status), "{status}");
        }
        for status in [403, 404, 200] {
            assert!(!status_counts_against_peer(status), "{status}");
        }
    }
}
