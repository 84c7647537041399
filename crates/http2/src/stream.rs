//! Stream states (RFC 9113 §5.1) as a server sees them. A stream this crate tracks is
//! open or half-closed; idle streams are not stored (any id above the last one opened is
//! idle) and closed ones are dropped. Server push is never used, so the reserved states
//! never occur.

/// The state of a stream that is not idle and not closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Both sides may send.
    Open,
    /// The client sent END_STREAM: only we send.
    HalfClosedRemote,
    /// We sent END_STREAM: only the client sends.
    HalfClosedLocal,
}

/// What happens to a stream when one side ends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// The stream goes on in this state.
    To(State),
    /// Both sides have ended it: the stream is closed.
    Closed,
}

impl State {
    /// The state after the client's END_STREAM.
    pub fn remote_end(self) -> Transition {
        match self {
            Self::Open => Transition::To(Self::HalfClosedRemote),
            Self::HalfClosedLocal | Self::HalfClosedRemote => Transition::Closed,
        }
    }

    /// The state after our END_STREAM.
    pub fn local_end(self) -> Transition {
        match self {
            Self::Open => Transition::To(Self::HalfClosedLocal),
            Self::HalfClosedRemote | Self::HalfClosedLocal => Transition::Closed,
        }
    }

    /// Whether the client may still send DATA or HEADERS on the stream.
    pub fn can_receive(self) -> bool {
        matches!(self, Self::Open | Self::HalfClosedLocal)
    }

    /// Whether we may still send DATA or HEADERS on the stream.
    pub fn can_send(self) -> bool {
        matches!(self, Self::Open | Self::HalfClosedRemote)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ends_close_the_stream_in_either_order() {
        assert_eq!(
            State::Open.remote_end(),
            Transition::To(State::HalfClosedRemote)
        );
        assert_eq!(State::HalfClosedRemote.local_end(), Transition::Closed);
        assert_eq!(
            State::Open.local_end(),
            Transition::To(State::HalfClosedLocal)
        );
        assert_eq!(State::HalfClosedLocal.remote_end(), Transition::Closed);
        assert!(State::HalfClosedLocal.can_receive() && !State::HalfClosedLocal.can_send());
        assert!(!State::HalfClosedRemote.can_receive() && State::HalfClosedRemote.can_send());
    }
}
