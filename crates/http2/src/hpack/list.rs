//! A decoded header list: every name and value in one buffer, so that a header block
//! costs two allocations (the bytes and the index), not two per field.

use super::HeaderField;

/// One field of a [`FieldList`], borrowed from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    pub name: &'a [u8],
    pub value: &'a [u8],
    /// Sent as never indexed (RFC 7541 §6.2.3).
    pub sensitive: bool,
}

/// Where one field lies in the buffer: its name, and its value right after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    start: u32,
    name_len: u32,
    value_len: u32,
    sensitive: bool,
    /// Left out of [`FieldList::iter`]: taken apart (a pseudo-header field) or folded
    /// into another (a second `cookie`).
    hidden: bool,
}

/// The fields of one header block, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldList {
    bytes: Vec<u8>,
    slots: Vec<Slot>,
}

impl FieldList {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for about `fields` fields of `bytes` bytes in all.
    pub fn with_capacity(fields: usize, bytes: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(bytes),
            slots: Vec::with_capacity(fields),
        }
    }

    /// Empties the list, keeping its memory.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.slots.clear();
    }

    /// Makes room for about `fields` fields of `bytes` bytes in all, as
    /// [`Self::with_capacity`] does for a new list.
    pub fn reserve(&mut self, fields: usize, bytes: usize) {
        self.bytes.reserve(bytes.saturating_sub(self.bytes.len()));
        self.slots.reserve(fields.saturating_sub(self.slots.len()));
    }

    /// Makes this list a copy of `other`, in the memory it has.
    pub fn copy_from(&mut self, other: &FieldList) {
        self.bytes.clear();
        self.bytes.extend_from_slice(&other.bytes);
        self.slots.clear();
        self.slots.extend_from_slice(&other.slots);
    }

    /// The bytes of the names and values.
    pub fn bytes_len(&self) -> usize {
        self.bytes.len()
    }

    /// The memory the list holds for names and values.
    pub fn capacity_bytes(&self) -> usize {
        self.bytes.capacity()
    }

    /// Appends a field.
    pub fn push(&mut self, name: &[u8], value: &[u8], sensitive: bool) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        self.push_slot(start, name.len(), sensitive);
    }

    /// The buffer, for a decoder that writes a field's bytes in place: it appends the
    /// name and then the value, and calls [`Self::commit`] (or [`Self::discard`]).
    pub(crate) fn bytes_mut(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// Makes the bytes appended since `start` a field whose name is the first `name_len`.
    pub(crate) fn commit(&mut self, start: usize, name_len: usize, sensitive: bool) {
        self.push_slot(start, name_len, sensitive);
    }

    /// Drops the bytes appended since `start` (a field that is not kept).
    pub(crate) fn discard(&mut self, start: usize) {
        self.bytes.truncate(start);
    }

    fn push_slot(&mut self, start: usize, name_len: usize, sensitive: bool) {
        // A header list is bounded far below 4 GiB by the limits it is decoded under.
        let narrow = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        self.slots.push(Slot {
            start: narrow(start),
            name_len: narrow(name_len),
            value_len: narrow(self.bytes.len() - start - name_len),
            sensitive,
            hidden: false,
        });
    }

    /// How many fields the list holds, hidden ones included.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The field at `index` (hidden ones included).
    pub fn get(&self, index: usize) -> Option<Field<'_>> {
        self.slots.get(index).map(|slot| self.field(slot))
    }

    fn field(&self, slot: &Slot) -> Field<'_> {
        let start = slot.start as usize;
        let middle = start + slot.name_len as usize;
        Field {
            name: &self.bytes[start..middle],
            value: &self.bytes[middle..middle + slot.value_len as usize],
            sensitive: slot.sensitive,
        }
    }

    /// The fields, in order, without the hidden ones.
    pub fn iter(&self) -> impl Iterator<Item = Field<'_>> + '_ {
        self.slots
            .iter()
            .filter(|slot| !slot.hidden)
            .map(|slot| self.field(slot))
    }

    /// The fields with their indexes, hidden ones included.
    pub fn indexed(&self) -> impl Iterator<Item = (usize, Field<'_>)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .map(|(index, slot)| (index, self.field(slot)))
    }

    /// Leaves the field at `index` out of [`Self::iter`].
    pub fn hide(&mut self, index: usize) {
        if let Some(slot) = self.slots.get_mut(index) {
            slot.hidden = true;
        }
    }

    /// Gives the field at `index` the values of the fields at `indexes` (its own among
    /// them, in order) joined with `separator`, and hides the others: one copy of the
    /// joined bytes, however many fields there are.
    pub fn join_values(&mut self, index: usize, indexes: &[usize], separator: &[u8]) {
        let Some(&slot) = self.slots.get(index) else {
            return;
        };
        let start = self.bytes.len();
        let name = slot.start as usize..(slot.start + slot.name_len) as usize;
        self.bytes.extend_from_within(name);
        for (position, &other) in indexes.iter().enumerate() {
            let Some(&from) = self.slots.get(other) else {
                continue;
            };
            if position > 0 {
                self.bytes.extend_from_slice(separator);
            }
            let value = (from.start + from.name_len) as usize;
            self.bytes
                .extend_from_within(value..value + from.value_len as usize);
            if other != index {
                self.slots[other].hidden = true;
            }
        }
        let narrow = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let joined = &mut self.slots[index];
        joined.start = narrow(start);
        joined.value_len = narrow(self.bytes.len() - start - slot.name_len as usize);
    }
}

impl From<Vec<HeaderField>> for FieldList {
    fn from(fields: Vec<HeaderField>) -> Self {
        let mut list = FieldList::new();
        for field in &fields {
            list.push(&field.name, &field.value, field.sensitive);
        }
        list
    }
}

impl PartialEq<[HeaderField]> for FieldList {
    fn eq(&self, other: &[HeaderField]) -> bool {
        self.iter().count() == other.len()
            && self.iter().zip(other).all(|(mine, theirs)| {
                mine.name == &theirs.name[..]
                    && mine.value == &theirs.value[..]
                    && mine.sensitive == theirs.sensitive
            })
    }
}

impl PartialEq<Vec<HeaderField>> for FieldList {
    fn eq(&self, other: &Vec<HeaderField>) -> bool {
        *self == other[..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_share_one_buffer_and_keep_their_order() {
        let mut list = FieldList::new();
        list.push(b":method", b"GET", false);
        list.push(b"cookie", b"a=1", false);
        list.push(b"authorization", b"secret", true);
        list.push(b"cookie", b"b=2", false);
        assert_eq!(list.len(), 4);
        assert_eq!(list.get(2).map(|field| field.sensitive), Some(true));
        list.hide(0);
        list.join_values(1, &[1, 3], b"; ");
        let pairs: Vec<(&[u8], &[u8])> = list.iter().map(|f| (f.name, f.value)).collect();
        assert_eq!(
            pairs,
            [
                (&b"cookie"[..], &b"a=1; b=2"[..]),
                (&b"authorization"[..], &b"secret"[..])
            ]
        );
        assert_eq!(list.get(0).map(|field| field.value), Some(&b"GET"[..]));
    }

    #[test]
    fn a_discarded_field_leaves_nothing() {
        let mut list = FieldList::new();
        list.push(b"a", b"1", false);
        let start = list.bytes_mut().len();
        list.bytes_mut()
            .extend_from_slice(b"too-long-name-and-value");
        list.discard(start);
        let start = list.bytes_mut().len();
        list.bytes_mut().extend_from_slice(b"bvalue");
        list.commit(start, 1, false);
        assert_eq!(
            list,
            vec![HeaderField::new("a", "1"), HeaderField::new("b", "value")]
        );
    }
}
