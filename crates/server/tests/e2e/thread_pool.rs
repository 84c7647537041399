//! `thread_pool NAME threads=N [max_queue=M]`: parsing and its errors.

use crate::support::Instance;
use crate::support::cli::assert_fails;

#[test]
fn pools_are_accepted_and_files_are_served() {
    let server = Instance::builder(
        "worker_processes 1;
        thread_pool default threads=2;
        thread_pool disk1 threads=1 max_queue=16;
        thread_pool disk2 threads=4;
        events {
        }
        http {
            server { listen 127.0.0.1:8080; root html; }
        }",
    )
    .file("html/file.txt", "through the pool\n")
    .start();
    assert_eq!(server.get("/file.txt").body_text(), "through the pool\n");
}

#[track_caller]
fn assert_pool_error(directives: &str, message: &str, line: usize) {
    assert_fails(
        &format!("events {{\n}}\n{directives}"),
        &format!("{message} in {{conf}}:{line}"),
    );
}

#[test]
fn zero_threads() {
    assert_pool_error(
        "thread_pool one threads=0;\n",
        "invalid threads value \"threads=0\"",
        3,
    );
}

#[test]
fn threads_are_required() {
    assert_pool_error(
        "thread_pool one max_queue=8;\n",
        "\"thread_pool\" must have \"threads\" parameter",
        3,
    );
}

#[test]
fn duplicate_pool_names() {
    assert_pool_error(
        "thread_pool one threads=1;\nthread_pool one threads=2;\n",
        "duplicate thread pool \"one\"",
        4,
    );
}

#[test]
fn thread_pool_is_a_main_context_directive() {
    assert_pool_error(
        "http {\n    thread_pool one threads=1;\n}\n",
        "\"thread_pool\" directive is not allowed here",
        4,
    );
}
