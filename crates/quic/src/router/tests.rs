use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use super::{Forwarded, Router, TAGGED_CID_LEN, destination_tag};

fn datagram(data: Vec<u8>) -> Forwarded {
    Forwarded {
        remote: SocketAddr::from((Ipv4Addr::LOCALHOST, 4433)),
        data,
    }
}

/// A short-header packet to a connection ID that begins with `tag`.
fn short_to(tag: u8) -> Vec<u8> {
    let mut packet = vec![0x40, tag];
    packet.extend_from_slice(&[7; TAGGED_CID_LEN - 1]);
    packet.extend_from_slice(&[0; 20]);
    packet
}

/// A long-header packet (version 1) to a connection ID of `length` bytes, `tag` first.
fn long_to(tag: u8, length: u8) -> Vec<u8> {
    let mut packet = vec![0xc0, 0, 0, 0, 1, length, tag];
    packet.extend_from_slice(&vec![7; usize::from(length).saturating_sub(1)]);
    packet.extend_from_slice(&[0; 20]);
    packet
}

#[test]
fn the_destination_tag_is_read_from_both_header_forms() {
    assert_eq!(destination_tag(&short_to(3)), Some(3));
    assert_eq!(destination_tag(&long_to(9, TAGGED_CID_LEN as u8)), Some(9));
    // A client's own random connection ID of another length names no member.
    assert_eq!(destination_tag(&long_to(9, 8)), None);
    assert_eq!(destination_tag(&[0x40, 1]), None, "too short");
    assert_eq!(destination_tag(&[]), None);
}

#[test]
fn members_get_their_own_tags_and_leave_when_dropped() {
    let router = Arc::new(Router::default());
    let first = router.join().expect("a tag");
    let second = router.join().expect("a tag");
    assert_ne!(first.tag(), second.tag());
    let first_tag = first.tag();
    drop(first);
    let third = router.join().expect("a tag");
    assert_ne!(
        third.tag(),
        first_tag,
        "a tag just given back is not reused at once"
    );
    assert_ne!(third.tag(), second.tag());
    let mut all: Vec<_> = (0..254).map(|_| router.join().expect("a tag")).collect();
    assert!(router.join().is_none(), "256 members at most");
    all.pop();
    assert!(router.join().is_some());
}

#[test]
fn a_datagram_goes_to_the_member_its_tag_names() {
    let router = Arc::new(Router::default());
    let mut old = router.join().expect("a tag");
    let mut new = router.join().expect("a tag");
    let from_new = new.forwarder();
    assert!(from_new.is_for_another(&short_to(old.tag())));
    assert!(!from_new.is_for_another(&short_to(new.tag())));
    from_new
        .forward(datagram(short_to(old.tag())), false)
        .expect("the old member takes it");
    assert_eq!(
        old.try_next().expect("in its inbox").data,
        short_to(old.tag())
    );
    assert!(new.try_next().is_none());
    // Its own packets, and a tag no member has, are given back.
    assert!(
        from_new
            .forward(datagram(short_to(new.tag())), false)
            .is_err()
    );
    let gone = old.tag().wrapping_add(100);
    assert!(from_new.forward(datagram(short_to(gone)), false).is_err());
}

#[test]
fn a_new_client_goes_to_the_newest_member_that_accepts() {
    let router = Arc::new(Router::default());
    let old = router.join().expect("a tag");
    let mut middle = router.join().expect("a tag");
    let mut newest = router.join().expect("a tag");
    let from_old = old.forwarder();
    old.stop_accepting();
    from_old
        .forward(datagram(long_to(1, 8)), true)
        .expect("taken");
    assert!(newest.try_next().is_some(), "the newest takes new clients");
    assert!(middle.try_next().is_none());
    newest.stop_accepting();
    from_old
        .forward(datagram(long_to(1, 8)), true)
        .expect("taken");
    assert!(
        middle.try_next().is_some(),
        "then the newest that still accepts"
    );
    middle.stop_accepting();
    assert!(from_old.forward(datagram(long_to(1, 8)), true).is_err());
}

#[test]
fn a_socket_has_one_router_while_it_has_members() {
    let router = Router::for_socket(0xdead_beef);
    let again = Router::for_socket(0xdead_beef);
    assert!(Arc::ptr_eq(&router, &again));
    let other = Router::for_socket(0xdead_bef0);
    assert!(!Arc::ptr_eq(&router, &other));
}
