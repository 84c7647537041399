//! The stream dependency tree of RFC 7540 §5.3, which nginx still follows (RFC 9113
//! deprecates it, but clients send it and nginx-tests' `h2_priority.t` checks the order).
//!
//! Each node has a parent (0 is the root) and a weight. PRIORITY frames may name idle
//! streams, and closed streams keep their place for a while so that later frames that
//! name them still mean something (§5.3.4); both kinds are retained up to a bound, the
//! oldest removed first, its children given to its parent with their weights shared out.
//!
//! The send order is nginx's: shallower streams first, and at one depth the larger share
//! (the weight times the parent's share, over 256) first.

use std::collections::{HashMap, VecDeque};

use crate::frame::PrioritySpec;

#[derive(Clone, Debug)]
struct Node {
    parent: u32,
    weight: u16,
    children: Vec<u32>,
    /// Whether the stream is open (not idle and not closed): open nodes are never pruned.
    open: bool,
}

/// The dependency tree of one connection.
#[derive(Clone, Debug)]
pub struct PriorityTree {
    /// By stream id. foldhash, seeded at random per connection: the send order looks up
    /// every ready stream's ancestors each time it chooses, and SipHash made that a few
    /// percent of serving a file (`bench/h2.sh`, h2c-static).
    nodes: HashMap<u32, Node, foldhash::fast::RandomState>,
    root_children: Vec<u32>,
    /// Idle and closed nodes, oldest first.
    retained: VecDeque<u32>,
    retained_max: usize,
    /// Counts the removals of nodes, which may move other streams up (see
    /// [`PriorityTree::changes`]).
    removals: u64,
}

impl PriorityTree {
    /// A tree that keeps at most `retained_max` idle or closed nodes.
    pub fn new(retained_max: usize) -> Self {
        Self {
            nodes: HashMap::default(),
            root_children: Vec::new(),
            retained: VecDeque::new(),
            retained_max,
            removals: 0,
        }
    }

    /// Grows whenever a node leaves the tree (its children then rank as its parent's):
    /// an order computed with [`Self::order`] holds while this stays the same and no
    /// PRIORITY or HEADERS frame is applied.
    pub fn changes(&self) -> u64 {
        self.removals
    }

    /// How many nodes the tree holds.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree holds no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// A stream's parent and weight.
    pub fn get(&self, stream_id: u32) -> Option<(u32, u16)> {
        self.nodes
            .get(&stream_id)
            .map(|node| (node.parent, node.weight))
    }

    /// A stream's children, in the order they were added.
    pub fn children(&self, stream_id: u32) -> &[u32] {
        match stream_id {
            0 => &self.root_children,
            _ => self
                .nodes
                .get(&stream_id)
                .map_or(&[], |node| &node.children),
        }
    }

    fn children_mut(&mut self, stream_id: u32) -> Option<&mut Vec<u32>> {
        match stream_id {
            0 => Some(&mut self.root_children),
            _ => self
                .nodes
                .get_mut(&stream_id)
                .map(|node| &mut node.children),
        }
    }

    /// Marks a stream open, with the default priority unless it already has a node.
    pub fn open(&mut self, stream_id: u32) {
        if !self.nodes.contains_key(&stream_id) {
            self.insert_node(stream_id, PrioritySpec::DEFAULT);
            if let Some(node) = self.nodes.get_mut(&stream_id) {
                node.open = true;
            }
            return;
        }
        if let Some(node) = self.nodes.get_mut(&stream_id) {
            node.open = true;
        }
        // An idle node a PRIORITY frame made: it is no longer a retained one.
        if let Some(at) = self.retained.iter().position(|&id| id == stream_id) {
            self.retained.remove(at);
        }
    }

    /// Marks a stream closed: its node is retained until the bound pushes it out.
    pub fn close(&mut self, stream_id: u32) {
        if let Some(node) = self.nodes.get_mut(&stream_id) {
            node.open = false;
            self.retained.push_back(stream_id);
            self.prune();
        }
    }

    /// Applies a priority from HEADERS or PRIORITY (the caller refused a self-dependency).
    /// A dependency on a stream not in the tree first gives that stream the default
    /// priority; a dependency on a descendant first moves that descendant up to the
    /// stream's own parent (§5.3.3).
    pub fn set(&mut self, stream_id: u32, spec: PrioritySpec) {
        debug_assert_ne!(stream_id, spec.dependency);
        if stream_id == spec.dependency {
            return;
        }
        if spec.dependency != 0 && !self.nodes.contains_key(&spec.dependency) {
            self.insert_node(spec.dependency, PrioritySpec::DEFAULT);
            self.retained.push_back(spec.dependency);
        }
        if !self.nodes.contains_key(&stream_id) {
            self.insert_node(stream_id, spec);
            self.retained.push_back(stream_id);
            self.prune();
            return;
        }
        if self.is_descendant(spec.dependency, stream_id) {
            let own_parent = self.nodes.get(&stream_id).map_or(0, |node| node.parent);
            self.move_node(spec.dependency, own_parent, false);
        }
        self.move_node(stream_id, spec.dependency, spec.exclusive);
        if let Some(node) = self.nodes.get_mut(&stream_id) {
            node.weight = spec.weight;
        }
        self.prune();
    }

    fn insert_node(&mut self, stream_id: u32, spec: PrioritySpec) {
        let node = Node {
            parent: 0,
            weight: spec.weight,
            children: Vec::new(),
            open: false,
        };
        self.nodes.insert(stream_id, node);
        self.attach(stream_id, spec.dependency, spec.exclusive);
    }

    /// Whether `stream_id` lies below `ancestor`.
    fn is_descendant(&self, stream_id: u32, ancestor: u32) -> bool {
        let mut current = stream_id;
        // Each step goes one level up; the tree is acyclic, so this ends at the root.
        for _ in 0..=self.nodes.len() {
            let Some(node) = self.nodes.get(&current) else {
                return false;
            };
            if node.parent == ancestor {
                return true;
            }
            current = node.parent;
        }
        false
    }

    /// Makes `stream_id` a child of `parent`; exclusive adopts the parent's other children.
    fn move_node(&mut self, stream_id: u32, parent: u32, exclusive: bool) {
        let Some(old_parent) = self.nodes.get(&stream_id).map(|node| node.parent) else {
            return;
        };
        if let Some(siblings) = self.children_mut(old_parent) {
            remove_child(siblings, stream_id);
        }
        self.attach(stream_id, parent, exclusive);
    }

    /// Adds a node that is no one's child as a child of `parent`.
    fn attach(&mut self, stream_id: u32, parent: u32, exclusive: bool) {
        let adopted = match (exclusive, self.children_mut(parent)) {
            (true, Some(children)) => std::mem::take(children),
            _ => Vec::new(),
        };
        for &child in &adopted {
            if let Some(node) = self.nodes.get_mut(&child) {
                node.parent = stream_id;
            }
        }
        if let Some(node) = self.nodes.get_mut(&stream_id) {
            node.parent = parent;
            node.children.extend(adopted);
        }
        match self.children_mut(parent) {
            Some(children) => children.push(stream_id),
            // The parent vanished (never happens: callers insert it first); use the root.
            None => {
                self.root_children.push(stream_id);
                if let Some(node) = self.nodes.get_mut(&stream_id) {
                    node.parent = 0;
                }
            }
        }
    }

    /// Removes the oldest retained nodes past the bound (§5.3.4): children move to the
    /// removed node's parent, each with its share of the removed node's weight.
    fn prune(&mut self) {
        while self.retained.len() > self.retained_max {
            let Some(stream_id) = self.retained.pop_front() else {
                break;
            };
            let Some(node) = self.nodes.get(&stream_id) else {
                continue;
            };
            if node.open {
                continue;
            }
            self.remove(stream_id);
        }
    }

    fn remove(&mut self, stream_id: u32) {
        let Some(node) = self.nodes.remove(&stream_id) else {
            return;
        };
        self.removals += 1;
        let total: u32 = node
            .children
            .iter()
            .filter_map(|id| self.nodes.get(id))
            .map(|child| u32::from(child.weight))
            .sum();
        for &child in &node.children {
            if let Some(child_node) = self.nodes.get_mut(&child) {
                child_node.parent = node.parent;
                let share = u32::from(node.weight) * u32::from(child_node.weight) / total.max(1);
                child_node.weight = u16::try_from(share.clamp(1, 256)).unwrap_or(256);
            }
        }
        if let Some(siblings) = self.children_mut(node.parent) {
            remove_child(siblings, stream_id);
            siblings.extend(node.children.iter().copied());
        }
    }

    /// A stream's depth (1 for a child of the root) and its share of the connection.
    fn rank(&self, stream_id: u32) -> (usize, f64) {
        let mut depth = 0;
        let mut share = 1.0;
        let mut current = stream_id;
        // The root (0) has no node.
        while let Some(node) = (current != 0).then(|| self.nodes.get(&current)).flatten() {
            depth += 1;
            share *= f64::from(node.weight) / 256.0;
            current = node.parent;
            if depth > self.nodes.len() {
                break;
            }
        }
        (depth, share)
    }

    /// The stream among `ready` that goes first: the shallowest, then the largest share,
    /// then the lowest id. A stream not in the tree ranks as a child of the root.
    pub fn first(&self, ready: impl IntoIterator<Item = u32>) -> Option<u32> {
        let mut best: Option<(usize, f64, u32)> = None;
        for stream_id in ready {
            let (depth, share) = self.rank(stream_id);
            let depth = depth.max(1);
            let better = match best {
                None => true,
                // Shallower, then a larger share, then a lower id.
                Some((best_depth, best_share, best_id)) => {
                    (depth, best_share, stream_id) < (best_depth, share, best_id)
                }
            };
            if better {
                best = Some((depth, share, stream_id));
            }
        }
        best.map(|(_, _, stream_id)| stream_id)
    }

    /// Sorts `ready` into the order [`Self::first`] would pick them one after another while
    /// the tree stays as it is: each stream ranked once, not once per choice. `ranks` is
    /// scratch space the caller keeps.
    pub fn order(&self, ready: &mut Vec<u32>, ranks: &mut Vec<(usize, f64, u32)>) {
        if ready.len() < 2 {
            return;
        }
        ranks.clear();
        ranks.extend(ready.iter().map(|&stream_id| {
            let (depth, share) = self.rank(stream_id);
            (depth.max(1), share, stream_id)
        }));
        // Shallower, then a larger share, then a lower id.
        ranks.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
        ready.clear();
        ready.extend(ranks.iter().map(|&(_, _, stream_id)| stream_id));
    }
}

/// Removes one child, keeping the others' order. The oldest nodes are the ones pruned, and
/// they sit near the front: a search from there is short where a full `retain` is not.
fn remove_child(children: &mut Vec<u32>, stream_id: u32) {
    if let Some(at) = children.iter().position(|&id| id == stream_id) {
        children.remove(at);
    }
}

#[cfg(test)]
mod tests;
