//! Directives distribution configs carry that have nothing to do in Portico:
//! `load_module` for a module Portico has built in, and `open_log_file_cache` (Portico
//! opens each log file once per configuration).

use crate::support::cli::{assert_fails, assert_http_body_fails, test_config};

#[test]
fn load_module_accepts_built_in_modules_only() {
    let (_, output) = test_config(concat!(
        "load_module modules/ngx_http_map_module.so;\n",
        "load_module /usr/lib/nginx/modules/ngx_http_proxy_module.so;\n",
        "events {}\nhttp {}\n",
    ));
    output.assert_code(0);
    assert_fails(
        "load_module modules/ngx_http_geoip_module.so;\nevents {}\nhttp {}\n",
        "load_module \"modules/ngx_http_geoip_module.so\": Portico has no \"http_geoip\" module in {conf}:1",
    );
}

#[test]
fn open_log_file_cache_is_checked() {
    let (_, output) = test_config(concat!(
        "events {}\nhttp {\n",
        "open_log_file_cache max=1000 inactive=20s valid=1m min_uses=2;\n",
        "server { open_log_file_cache off; }\n}\n",
    ));
    output.assert_code(0);
    assert_http_body_fails(
        "open_log_file_cache inactive=20s;",
        "\"open_log_file_cache\" must have \"max\" parameter in {conf}:4",
    );
    assert_http_body_fails(
        "open_log_file_cache max=10 bogus=1;",
        "invalid \"open_log_file_cache\" parameter \"bogus=1\" in {conf}:4",
    );
}
