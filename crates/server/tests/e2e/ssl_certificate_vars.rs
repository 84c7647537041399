//! Variables in `ssl_certificate` / `ssl_certificate_key`: the pair named by the
//! connection's variables is loaded per handshake off the loop, kept as
//! `ssl_certificate_cache` says, and a name that fails to load fails only its handshake.

use crate::support::Instance;
use crate::support::tls::{self, Key, Options, have_openssl};

/// A server whose pair is `$ssl_server_name.crt` / `.key`.
fn body(extra: &str) -> String {
    format!(
        "server {{ listen 127.0.0.1:8443 ssl; server_name one.test two.test;
            ssl_certificate $ssl_server_name.crt;
            ssl_certificate_key $ssl_server_name.key;
            {extra}
            location / {{ return 200 \"$ssl_server_name\"; }} }}"
    )
}

/// [`body`] started, with `one.test` (RSA) and `two.test` (ECDSA) made for it.
fn by_server_name(extra: &str) -> Instance {
    tls::with_files(Instance::http_builder(&body(extra)), |directory| {
        tls::self_signed(directory, "one.test", Key::Rsa);
        tls::self_signed(directory, "two.test", Key::Ecdsa);
    })
    .start()
}

fn common_name(port: u16, name: &str) -> std::io::Result<String> {
    tls::connect(port, &Options::sni(name)).map(|client| tls::peer_common_name(&client))
}

fn remove_pair(server: &Instance, name: &str) {
    for extension in ["crt", "key"] {
        let path = server.prefix().path().join(format!("{name}.{extension}"));
        std::fs::remove_file(&path).expect("remove a certificate file");
    }
}

#[test]
fn each_sni_name_gets_the_pair_its_name_makes() {
    if !have_openssl() {
        return;
    }
    let server = by_server_name("");
    let port = server.port_of(8443);
    assert_eq!(
        common_name(port, "one.test").expect("handshake"),
        "one.test"
    );
    assert_eq!(
        common_name(port, "two.test").expect("handshake"),
        "two.test"
    );
    let response = tls::get(port, &Options::sni("two.test"), "/");
    assert_eq!(response.body_text(), "two.test");
}

#[test]
fn a_missing_file_fails_its_handshake_and_the_next_one_works() {
    if !have_openssl() {
        return;
    }
    let server = by_server_name("");
    let port = server.port_of(8443);
    assert!(
        common_name(port, "missing.test").is_err(),
        "no pair, no handshake"
    );
    let prefix = server.prefix().path().display().to_string();
    let line = server.wait_for_error_log(&format!(
        "cannot load certificate \"{prefix}/missing.test.crt\": BIO_new_file() failed"
    ));
    assert!(line.contains("[error]"), "{line}");
    assert!(
        line.contains("while SSL handshaking, client: 127.0.0.1"),
        "{line}"
    );
    assert_eq!(
        common_name(port, "one.test").expect("handshake"),
        "one.test"
    );
    assert!(
        tls::connect(port, &Options::default()).is_err(),
        "no SNI name: the pair is \".crt\", which does not exist"
    );
}

#[test]
fn a_loaded_pair_is_cached_and_not_read_again() {
    if !have_openssl() {
        return;
    }
    let server = by_server_name("");
    let port = server.port_of(8443);
    assert_eq!(
        common_name(port, "one.test").expect("handshake"),
        "one.test"
    );
    remove_pair(&server, "one.test");
    remove_pair(&server, "two.test");
    assert_eq!(
        common_name(port, "one.test").expect("served from the cache"),
        "one.test"
    );
    assert!(
        common_name(port, "two.test").is_err(),
        "a pair never loaded is read from the disk, and is gone"
    );
}

#[test]
fn ssl_certificate_cache_off_reads_the_files_every_time() {
    if !have_openssl() {
        return;
    }
    let server = by_server_name("ssl_certificate_cache off;");
    let port = server.port_of(8443);
    assert_eq!(
        common_name(port, "one.test").expect("handshake"),
        "one.test"
    );
    remove_pair(&server, "one.test");
    assert!(
        common_name(port, "one.test").is_err(),
        "read again, and gone"
    );
}

#[test]
fn ssl_certificate_cache_max_counts_files() {
    if !have_openssl() {
        return;
    }
    // Two files per pair: one pair fits, a second one drops the first.
    let server = by_server_name("ssl_certificate_cache max=2;");
    let port = server.port_of(8443);
    assert_eq!(
        common_name(port, "one.test").expect("handshake"),
        "one.test"
    );
    assert_eq!(
        common_name(port, "two.test").expect("handshake"),
        "two.test"
    );
    remove_pair(&server, "one.test");
    remove_pair(&server, "two.test");
    assert_eq!(common_name(port, "two.test").expect("cached"), "two.test");
    assert!(common_name(port, "one.test").is_err(), "dropped, then gone");
}

#[test]
fn a_reload_starts_with_an_empty_cache() {
    if !have_openssl() {
        return;
    }
    let mut server = by_server_name("");
    let port = server.port_of(8443);
    assert_eq!(
        common_name(port, "one.test").expect("handshake"),
        "one.test"
    );
    remove_pair(&server, "one.test");
    // The new generation reads the files again: one.test's are gone.
    server.reload(&body("ssl_buffer_size 8k;"), |server| {
        common_name(server.port_of(8443), "one.test").is_err()
    });
    assert_eq!(
        common_name(port, "two.test").expect("handshake"),
        "two.test"
    );
}

#[test]
fn a_map_variable_can_name_the_pair() {
    if !have_openssl() {
        return;
    }
    let server = tls::with_files(
        Instance::http_builder(
            "map $ssl_server_name $pair { default rsa; ~^ecdsa\\. ecdsa; }
             server { listen 127.0.0.1:8443 ssl;
                ssl_certificate $pair.crt; ssl_certificate_key $pair.key;
                location / { return 200 $pair; } }",
        ),
        |directory| {
            tls::self_signed(directory, "rsa", Key::Rsa);
            tls::self_signed(directory, "ecdsa", Key::Ecdsa);
        },
    )
    .start();
    let port = server.port_of(8443);
    assert_eq!(common_name(port, "ecdsa.test").expect("handshake"), "ecdsa");
    assert_eq!(common_name(port, "other.test").expect("handshake"), "rsa");
    assert_eq!(
        tls::connect(port, &Options::default())
            .map(|client| tls::peer_common_name(&client))
            .expect("no SNI"),
        "rsa"
    );
}

#[test]
fn bad_ssl_certificate_cache_parameters_fail_the_load() {
    crate::support::cli::assert_fails(
        "events {}\nhttp { ssl_certificate_cache max=0; }\n",
        "invalid \"ssl_certificate_cache\" parameter \"max=0\" in {conf}:2",
    );
    crate::support::cli::assert_fails(
        "events {}\nhttp { ssl_certificate_cache inactive=10s; }\n",
        "\"ssl_certificate_cache\" must have the \"max\" parameter in {conf}:2",
    );
}

/// Tasks the `default` pools of all workers have started (counted before they run, so a
/// task whose result was awaited is always in).
fn default_pool_tasks(server: &Instance) -> f64 {
    let response = server.get("/metrics");
    assert_eq!(response.status, 200);
    response
        .body_text()
        .lines()
        .filter_map(|line| {
            line.strip_prefix("portico_thread_pool_task_wait_seconds_count{pool=\"default\",")
        })
        .filter_map(|rest| rest.split_once(' '))
        .map(|(_, value)| value.parse::<f64>().expect("a sample's value"))
        .sum()
}

#[test]
fn the_pair_is_read_on_the_default_pool_once() {
    if !have_openssl() {
        return;
    }
    let server = tls::with_files(
        Instance::http_builder(&format!(
            "{}
             server {{ listen 127.0.0.1:8080; location = /metrics {{ portico_metrics; }} }}",
            body("")
        )),
        |directory| tls::self_signed(directory, "one.test", Key::Rsa),
    )
    .start();
    let port = server.port_of(8443);
    // Each scrape is itself a task on the default pool, counted by itself.
    let before = default_pool_tasks(&server);
    assert_eq!(
        common_name(port, "one.test").expect("handshake"),
        "one.test"
    );
    let loaded = default_pool_tasks(&server);
    assert_eq!(loaded - before, 2.0, "the scrape and the pair's load");
    assert_eq!(
        common_name(port, "one.test").expect("handshake"),
        "one.test"
    );
    let cached = default_pool_tasks(&server);
    assert_eq!(cached - loaded, 1.0, "the scrape only: the pair was cached");
}

#[test]
fn data_with_a_variable_takes_the_pem_from_it() {
    if !have_openssl() {
        return;
    }
    let scratch = crate::support::TempPrefix::new();
    tls::self_signed(scratch.path(), "inline", Key::Ecdsa);
    let certificate = scratch.read("inline.crt");
    let key = scratch.read("inline.key");
    let server = Instance::http(&format!(
        "map $ssl_server_name $certificate {{ default '{certificate}'; }}
         map $ssl_server_name $key {{ default '{key}'; }}
         server {{ listen 127.0.0.1:8443 ssl;
            ssl_certificate data:$certificate; ssl_certificate_key data:$key;
            location / {{ return 200 ok; }} }}"
    ));
    let port = server.port_of(8443);
    assert_eq!(common_name(port, "any.test").expect("handshake"), "inline");
}

#[test]
fn a_server_without_certificates_uses_the_default_servers_names() {
    if !have_openssl() {
        return;
    }
    let server = tls::with_files(
        Instance::http_builder(
            "server { listen 127.0.0.1:8443 ssl; server_name one.test;
                ssl_certificate $ssl_server_name.crt; ssl_certificate_key $ssl_server_name.key;
                location / { return 200 default; } }
             server { listen 127.0.0.1:8443 ssl; server_name two.test;
                location / { return 200 \"no context $ssl_server_name\"; } }",
        ),
        |directory| {
            tls::self_signed(directory, "one.test", Key::Rsa);
            tls::self_signed(directory, "two.test", Key::Ecdsa);
        },
    )
    .start();
    let port = server.port_of(8443);
    assert_eq!(
        common_name(port, "two.test").expect("handshake"),
        "two.test"
    );
    let response = tls::get(port, &Options::sni("two.test"), "/");
    assert_eq!(response.body_text(), "no context two.test");
}

/// The same cache in `stream` servers: a loaded pair is served after its files are gone;
/// with `ssl_certificate_cache off` it is read again.
#[test]
fn stream_servers_cache_their_pairs_too() {
    if !have_openssl() {
        return;
    }
    let server = tls::with_files(
        Instance::builder(
            "events {}
             stream {
                 ssl_certificate $ssl_server_name.crt;
                 ssl_certificate_key $ssl_server_name.key;
                 server { listen 127.0.0.1:8443 ssl; return ok; }
                 server { listen 127.0.0.1:8444 ssl; ssl_certificate_cache off; return ok; }
             }",
        ),
        |directory| {
            tls::self_signed(directory, "one.test", Key::Rsa);
            tls::self_signed(directory, "two.test", Key::Ecdsa);
        },
    )
    .start();
    let (cached, uncached) = (server.port_of(8443), server.port_of(8444));
    assert_eq!(
        common_name(cached, "one.test").expect("handshake"),
        "one.test"
    );
    assert_eq!(
        common_name(uncached, "two.test").expect("handshake"),
        "two.test"
    );
    remove_pair(&server, "one.test");
    remove_pair(&server, "two.test");
    assert_eq!(
        common_name(cached, "one.test").expect("served from the cache"),
        "one.test"
    );
    assert!(
        common_name(uncached, "two.test").is_err(),
        "read again, and gone"
    );
}
