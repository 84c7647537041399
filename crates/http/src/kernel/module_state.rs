//! What a module keeps per request, in its own slot (nginx's `r->ctx[module]`): a module
//! reads and writes its own type, and the kernel names none of them. A request without
//! such state allocates nothing; a zero-sized state (a flag that something happened)
//! allocates nothing either.

use std::any::{Any, TypeId};

/// A module's per-request state.
pub trait ModuleState: Any {
    /// What a subrequest made by this request starts with, when it inherits the state
    /// (as the `limit_req` and `limit_conn` verdicts of the main request); by default a
    /// subrequest starts without it.
    fn for_subrequest(&self) -> Option<Box<dyn ModuleState>> {
        None
    }
}

/// The slots of one request: at most one value per type, found by a short linear search
/// (a request holds the state of a handful of modules at most).
#[derive(Default)]
pub struct ModuleStates {
    slots: Vec<(TypeId, Box<dyn ModuleState>)>,
}

impl ModuleStates {
    /// The state of type `T`, if the module set one.
    pub fn get<T: ModuleState>(&self) -> Option<&T> {
        let id = TypeId::of::<T>();
        let (_, state) = self.slots.iter().find(|(slot, _)| *slot == id)?;
        (state.as_ref() as &dyn Any).downcast_ref()
    }

    /// The state of type `T`, to change, if the module set one.
    pub fn get_mut<T: ModuleState>(&mut self) -> Option<&mut T> {
        let id = TypeId::of::<T>();
        let (_, state) = self.slots.iter_mut().find(|(slot, _)| *slot == id)?;
        (state.as_mut() as &mut dyn Any).downcast_mut()
    }

    /// The state of type `T`, made with its default on first use.
    pub fn get_or_default<T: ModuleState + Default>(&mut self) -> &mut T {
        let id = TypeId::of::<T>();
        let index = match self.slots.iter().position(|(slot, _)| *slot == id) {
            Some(index) => index,
            None => {
                self.slots.push((id, Box::new(T::default())));
                self.slots.len() - 1
            }
        };
        (self.slots[index].1.as_mut() as &mut dyn Any)
            .downcast_mut()
            .expect("a slot holds the type it is keyed by")
    }

    /// Sets the state of type `T`, replacing what was there.
    pub fn set<T: ModuleState>(&mut self, state: T) {
        let id = TypeId::of::<T>();
        match self.slots.iter_mut().find(|(slot, _)| *slot == id) {
            Some((_, slot)) => *slot = Box::new(state),
            None => self.slots.push((id, Box::new(state))),
        }
    }

    /// Takes the state of type `T` out of its slot.
    pub fn take<T: ModuleState>(&mut self) -> Option<T> {
        let id = TypeId::of::<T>();
        let index = self.slots.iter().position(|(slot, _)| *slot == id)?;
        let (_, state) = self.slots.swap_remove(index);
        let state: Box<dyn Any> = state;
        state.downcast().ok().map(|state| *state)
    }

    /// What a subrequest starts with: the states that say they are inherited.
    pub fn for_subrequest(&self) -> ModuleStates {
        ModuleStates {
            slots: self
                .slots
                .iter()
                .filter_map(|(id, state)| Some((*id, state.for_subrequest()?)))
                .collect(),
        }
    }

    /// Drops every state, keeping the slots' room for the connection's next request.
    pub fn clear(&mut self) {
        self.slots.clear();
    }
}

impl std::fmt::Debug for ModuleStates {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "ModuleStates({} slots)", self.slots.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq)]
    struct Counted(u32);
    impl ModuleState for Counted {}

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Verdict(&'static str);
    impl ModuleState for Verdict {
        fn for_subrequest(&self) -> Option<Box<dyn ModuleState>> {
            Some(Box::new(*self))
        }
    }

    struct Flag;
    impl ModuleState for Flag {}

    #[test]
    fn each_type_has_its_own_slot() {
        let mut states = ModuleStates::default();
        assert!(states.get::<Counted>().is_none());
        states.get_or_default::<Counted>().0 += 2;
        states.get_or_default::<Counted>().0 += 3;
        states.set(Verdict("PASSED"));
        assert_eq!(states.get::<Counted>(), Some(&Counted(5)));
        assert_eq!(states.get::<Verdict>(), Some(&Verdict("PASSED")));
        states.set(Verdict("REJECTED"));
        assert_eq!(states.get::<Verdict>(), Some(&Verdict("REJECTED")));
        states.get_mut::<Counted>().expect("set above").0 = 1;
        assert_eq!(states.take::<Counted>(), Some(Counted(1)));
        assert!(states.get::<Counted>().is_none());
        assert_eq!(states.get::<Verdict>(), Some(&Verdict("REJECTED")));
    }

    #[test]
    fn a_subrequest_inherits_only_what_says_so() {
        let mut states = ModuleStates::default();
        states.set(Verdict("DELAYED"));
        states.set(Counted(7));
        states.set(Flag);
        let child = states.for_subrequest();
        assert_eq!(child.get::<Verdict>(), Some(&Verdict("DELAYED")));
        assert!(child.get::<Counted>().is_none());
        assert!(child.get::<Flag>().is_none());
        states.clear();
        assert!(states.get::<Verdict>().is_none() && states.get::<Flag>().is_none());
    }
}
