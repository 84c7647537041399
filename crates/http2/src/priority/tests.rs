//! The tree operations of RFC 7540 §5.3 and the orders nginx-tests' `h2_priority.t` expects.

use super::PriorityTree;
use crate::frame::PrioritySpec;

fn spec(dependency: u32, weight: u16, exclusive: bool) -> PrioritySpec {
    PrioritySpec {
        dependency,
        exclusive,
        weight,
    }
}

#[test]
fn weights_order_siblings() {
    let mut tree = PriorityTree::new(16);
    tree.open(1);
    tree.open(3);
    tree.set(1, spec(0, 1, false));
    tree.set(3, spec(0, 256, false));
    assert_eq!(tree.first([1, 3]), Some(3));
    tree.set(1, spec(0, 256, false));
    tree.set(3, spec(0, 1, false));
    assert_eq!(tree.first([1, 3]), Some(1));
}

#[test]
fn a_parent_goes_before_its_children_and_weights_order_them() {
    // h2_priority.t "weighted dependency": 5 on the root, 1 (weight 256) and 3 (weight 1)
    // on 5, set by PRIORITY frames before the streams open.
    let mut tree = PriorityTree::new(16);
    tree.set(5, spec(0, 16, false));
    tree.set(1, spec(5, 256, false));
    tree.set(3, spec(5, 1, false));
    for stream_id in [1, 3, 5] {
        tree.open(stream_id);
    }
    assert_eq!(
        tree.get(1),
        Some((5, 256)),
        "opening keeps the priority a PRIORITY frame set"
    );
    let mut order = Vec::new();
    let mut ready = vec![1, 3, 5];
    while let Some(next) = tree.first(ready.iter().copied()) {
        order.push(next);
        ready.retain(|&id| id != next);
    }
    assert_eq!(order, [5, 1, 3]);
}

#[test]
fn exclusive_dependency_adopts_the_parents_children() {
    let mut tree = PriorityTree::new(16);
    tree.set(1, spec(0, 16, false));
    tree.set(3, spec(1, 16, false));
    tree.set(5, spec(1, 16, true));
    assert_eq!(tree.children(1), [5]);
    assert_eq!(tree.children(5), [3]);
    assert_eq!(tree.get(3), Some((5, 16)));
}

#[test]
fn depending_on_a_descendant_moves_it_up_first() {
    // RFC 7540 §5.3.3's example: A is made dependent on its descendant D.
    let (a, b, c, d, e, f) = (1, 3, 5, 7, 9, 11);
    let mut tree = PriorityTree::new(16);
    tree.set(a, spec(0, 16, false));
    tree.set(b, spec(a, 16, false));
    tree.set(c, spec(a, 16, false));
    tree.set(d, spec(c, 16, false));
    tree.set(e, spec(c, 16, false));
    tree.set(f, spec(d, 16, false));
    tree.set(a, spec(d, 16, false));
    assert_eq!(tree.get(d), Some((0, 16)));
    assert_eq!(tree.children(d), [f, a]);
    assert_eq!(tree.children(a), [b, c]);
    assert_eq!(tree.children(c), [e]);
    // Exclusive: A takes F as its child.
    tree.set(a, spec(d, 16, true));
    assert_eq!(tree.children(d), [a]);
    assert_eq!(tree.children(a), [b, c, f]);
}

#[test]
fn unknown_dependency_gets_the_default_priority() {
    let mut tree = PriorityTree::new(16);
    tree.set(1, spec(99, 200, false));
    assert_eq!(tree.get(99), Some((0, 16)));
    assert_eq!(tree.get(1), Some((99, 200)));
}

#[test]
fn closed_nodes_are_retained_then_pruned_with_their_weight_shared() {
    // h2_priority.t "removed dependency": 1 <- 3 <- 5, then 3 closes and many streams pass.
    let mut tree = PriorityTree::new(4);
    tree.set(1, spec(0, 16, false));
    tree.set(3, spec(1, 32, false));
    tree.set(5, spec(3, 16, false));
    tree.set(7, spec(3, 48, false));
    for stream_id in [1, 3, 5, 7] {
        tree.open(stream_id);
    }
    tree.close(3);
    assert_eq!(
        tree.get(5),
        Some((3, 16)),
        "a closed node keeps its children for a while"
    );
    for stream_id in (9..60).step_by(2) {
        tree.open(stream_id);
        tree.close(stream_id);
    }
    assert_eq!(tree.get(3), None);
    assert_eq!(tree.get(5), Some((1, 8)));
    assert_eq!(tree.get(7), Some((1, 24)));
    assert!(tree.len() <= 4 + 4, "open nodes plus the retained bound");
    // The circular reprioritisation that follows in the test: 1 on 5, then 5 on 1.
    tree.set(1, spec(5, 16, false));
    tree.set(5, spec(1, 16, false));
    assert_eq!(tree.get(1), Some((0, 16)));
    assert_eq!(tree.get(5), Some((1, 16)));
    assert_eq!(tree.first([1, 5]), Some(1));
}

#[test]
fn priority_frames_for_idle_streams_are_bounded() {
    let mut tree = PriorityTree::new(100);
    for stream_id in (1..200_000).step_by(2) {
        tree.set(stream_id, spec(stream_id + 2, 16, stream_id % 3 == 0));
    }
    assert!(tree.len() <= 102, "{} nodes", tree.len());
}
