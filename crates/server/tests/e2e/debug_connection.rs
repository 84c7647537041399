//! `debug_connection`: a connection from an address it names writes its debug lines to
//! every error log whatever the log's level; other connections do not.

use crate::support::Instance;
use crate::support::cli::assert_fails;

fn conf(debug_connection: &str) -> String {
    format!(
        "worker_processes 1;
        events {{
            {debug_connection}
        }}
        http {{
            error_log logs/second.log alert;
            server {{
                listen 127.0.0.1:8080;
                location /named {{ return 200 named; }}
            }}
        }}"
    )
}

fn second_log(server: &Instance) -> String {
    std::fs::read_to_string(server.prefix().path().join("logs/second.log")).unwrap_or_default()
}

#[test]
fn a_named_client_logs_its_debug_lines_everywhere() {
    let server = Instance::builder(&conf("debug_connection 127.0.0.0/8;")).start();
    assert_eq!(server.get("/named").status, 200);
    let expected = "[debug]";
    let line = "using configuration \"/named\"";
    crate::support::wait_until("the debug line", crate::support::PATIENCE, || {
        second_log(&server).contains(line)
    });
    let text = second_log(&server);
    assert!(text.contains(expected), "{text}");
}

#[test]
fn other_clients_log_at_their_logs_level() {
    let server = Instance::builder(&conf(
        "debug_connection 10.0.0.0/8;\n debug_connection unix:;",
    ))
    .start();
    assert_eq!(server.get("/named").status, 200);
    assert_eq!(server.get("/named").status, 200);
    assert_eq!(second_log(&server), "", "nothing at debug for 127.0.0.1");
    assert!(!server.error_log().contains("[debug]"));
}

#[test]
fn debug_connection_addresses_are_checked() {
    assert_fails(
        "events {\n    debug_connection nowhere;\n}\n",
        "invalid address \"nowhere\" in \"debug_connection\" in {conf}:2",
    );
    assert_fails(
        "events {\n    debug_connection all;\n}\n",
        "invalid address \"all\" in \"debug_connection\" in {conf}:2",
    );
}
