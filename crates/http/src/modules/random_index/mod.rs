//! `random_index` (nginx's ngx_http_random_index_module): a request for a directory is
//! redirected internally to one of its files, chosen at random; the directory is read on
//! the pool.

pub mod directives;
mod listing;
pub mod settings;

use crate::kernel::file::io::FileError;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::worker::HttpWorker;

/// What the handler decided.
#[derive(Debug)]
pub enum Choice {
    /// Not a directory request, or a directory without files: the static handler's turn.
    Declined,
    /// An internal redirect to this URI (the request's `$uri` and the file's name).
    Redirect(Vec<u8>),
}

/// The content handler's part for a location with `random_index on`: for a URI ending in
/// `/`, a random regular file of the directory (dot files left out, links followed).
pub(crate) async fn choose(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &crate::kernel::conf::Location,
) -> Result<Choice, FileError> {
    if !request.uri.ends_with(b"/") {
        return Ok(Choice::Declined);
    }
    let template = location.settings.core.document_root.template();
    let root = match template.as_literal() {
        Some(literal) => literal.to_vec(),
        None => crate::kernel::variables::evaluate::render(worker, connection, request, template),
    };
    let mut directory = crate::kernel::file::map_path(location, &root, request);
    if directory.len() > 1 {
        directory.pop();
    }
    let names = worker
        .offload(threadpool::TaskKind::Open, move || {
            listing::regular_files(&directory)
        })
        .await??;
    if names.is_empty() {
        return Ok(Choice::Declined);
    }
    let picked = &names[random_below(names.len())];
    let mut uri = request.uri.to_vec();
    uri.extend_from_slice(picked);
    Ok(Choice::Redirect(uri))
}

/// A number below `bound` (at least 1): a fresh randomly keyed hash of the clock.
fn random_below(bound: usize) -> usize {
    use std::hash::BuildHasher;
    debug_assert!(bound > 0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    let bits = std::collections::hash_map::RandomState::new().hash_one(nanos);
    (bits % bound as u64) as usize
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    use super::listing::regular_files;
    use super::*;

    #[test]
    fn only_regular_files_through_links_are_candidates() {
        let directory = std::env::temp_dir().join(format!(
            "portico-random-index-{}-{}",
            std::process::id(),
            random_below(1 << 30)
        ));
        std::fs::create_dir_all(directory.join("sub")).unwrap();
        std::fs::write(directory.join("page.html"), "x").unwrap();
        std::fs::write(directory.join(".hidden"), "x").unwrap();
        std::os::unix::fs::symlink(directory.join("page.html"), directory.join("link")).unwrap();
        std::os::unix::fs::symlink(directory.join("sub"), directory.join("sublink")).unwrap();
        std::os::unix::fs::symlink(directory.join("gone"), directory.join("dangling")).unwrap();
        let mut names = regular_files(directory.as_os_str().as_bytes()).unwrap();
        names.sort();
        assert_eq!(names, vec![b"link".to_vec(), b"page.html".to_vec()]);
        let missing = regular_files(directory.join("none").as_os_str().as_bytes()).unwrap_err();
        assert_eq!(missing.status, 404);
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[test]
    fn random_choices_stay_below_the_bound_and_vary() {
        let picks: Vec<usize> = (0..200).map(|_| random_below(5)).collect();
        assert!(picks.iter().all(|&pick| pick < 5));
        assert!(picks.iter().any(|&pick| pick != picks[0]));
    }
}
