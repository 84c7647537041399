//! Cache directives and parameters accepted for nginx's configs that have no effect of
//! their own to observe here (`postpone_output`, which Portico accepts on purpose; the
//! NGINX Plus `purger*` parameters) in a config with the other cache directives
//! (`proxy_cache_background_update`, `proxy_cache_lock_stream`, `proxy_cache_purge`):
//! it passes `-t`, starts, and the cache works. Also the load errors of the cache's
//! directives that such configs can run into.

use crate::proxy_cache::{asked, cached_proxy, ok, wait_stored, x_cache};
use crate::support::cli::{assert_http_body_fails, test_http_body};

const ACCEPTED: &str = "
proxy_cache_path %%PREFIX%%/cache levels=1:2 keys_zone=one:1m purger=on purger_files=10
                 purger_sleep=50ms purger_threshold=100ms;
postpone_output 1460;
map $request_method $purge_method {
    PURGE 1;
    default 0;
}
server {
    listen 127.0.0.1:8080;
    location / {
        proxy_pass http://127.0.0.1:8081;
        proxy_cache one;
        proxy_cache_key $uri;
        proxy_cache_valid 200 1m;
        proxy_cache_lock on;
        proxy_cache_lock_stream off;
        proxy_cache_background_update on;
        proxy_cache_use_stale updating;
        proxy_cache_purge $purge_method;
        postpone_output 0;
        add_header X-Cache $upstream_cache_status always;
    }
}";

/// `portico -t` accepts every one of these directives and parameters.
#[test]
fn accepted_cache_directives_pass_the_config_test() {
    let config = ACCEPTED.replace("%%PREFIX%%/", "");
    let config = config.replace("127.0.0.1:8081", "127.0.0.1:9");
    let config = config.replace("listen 127.0.0.1:8080", "listen 127.0.0.1:80");
    let (_, output) = test_http_body(&config);
    output.assert_code(0);
    assert!(
        output.stderr.contains("test is successful"),
        "{}",
        output.stderr
    );
}

/// With them in the config, the cache still stores a MISS and answers a HIT.
#[test]
fn the_cache_works_beside_the_accepted_directives() {
    let (server, upstream) = cached_proxy(ACCEPTED, |request, number| {
        let path = request.split_whitespace().nth(1).unwrap_or("").to_owned();
        ok(&format!("{path} #{number}"), "")
    });
    assert_eq!(x_cache(&server.get("/page")), "MISS");
    wait_stored(&server.prefix().join("cache"), "/page");
    let hit = server.get("/page");
    assert_eq!(
        (x_cache(&hit), hit.body_text().as_str()),
        ("HIT", "/page #1")
    );
    assert_eq!(asked(&upstream), 1);
}

/// The load errors of a cache config: a literal zone that no `proxy_cache_path` declares,
/// `proxy_cache` and `proxy_store` in one location, and a keys zone too small or named twice.
#[test]
fn cache_config_errors_are_nginx_s() {
    assert_http_body_fails(
        "server {\nlocation / { proxy_pass http://127.0.0.1:9; proxy_cache nope; }\n}",
        "\"proxy_cache\" zone \"nope\" is unknown in {conf}:5",
    );
    assert_http_body_fails(
        "proxy_cache_path /tmp/portico-x keys_zone=one:1m;\nserver {\n\
         location / { proxy_store on;\nproxy_cache one; }\n}",
        "\"proxy_cache\" directive is incompatible with \"proxy_store\" in {conf}:7",
    );
    assert_http_body_fails(
        "proxy_cache_path /tmp/portico-x keys_zone=one:1k;",
        "keys zone \"keys_zone=one:1k\" is too small in {conf}:4",
    );
    assert_http_body_fails(
        "proxy_cache_path /tmp/portico-x keys_zone=one:1m;\nproxy_cache_path /tmp/portico-y keys_zone=one:1m;",
        "duplicate zone \"one\" in {conf}:5",
    );
    assert_http_body_fails(
        "proxy_cache_path /tmp/portico-x levels=1:2;",
        "\"proxy_cache_path\" must have \"keys_zone\" parameter in {conf}:4",
    );
}
