//! `random_index`: a directory request is redirected to one of its regular files (links
//! followed, directories and dot files left out); without files the static handler answers.

use crate::support::Instance;

#[test]
fn a_directory_request_gets_one_of_its_files() {
    let server = Instance::http_builder(
        "server { listen 127.0.0.1:8080; root html; location / { random_index on; } }",
    )
    .file("html/x/one.html", "ONE")
    .file("html/x/two.html", "TWO")
    .file("html/x/.hidden", "HIDDEN")
    .file("html/x/sub/inner.html", "INNER")
    .file("html/empty/sub/inner.html", "INNER")
    .start();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..40 {
        let response = server.get("/x/");
        assert_eq!(response.status, 200);
        seen.insert(response.body_text());
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["ONE".to_owned(), "TWO".to_owned()]
    );
    // A file request is the static handler's.
    assert_eq!(server.get("/x/one.html").body_text(), "ONE");
    // No file to choose: the index module's answer (no index.html, no autoindex).
    assert_eq!(server.get("/empty/").status, 403);
    assert_eq!(server.get("/missing/").status, 404);
}
