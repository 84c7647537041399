//! Directives distribution configs carry that have nothing to do in Portico:
//! `load_module` for a module Portico has built in, and `open_log_file_cache` (Portico
//! opens each log file once per configuration).

use crate::support::cli::{assert_fails, assert_http_body_fails, test_config};

#[test]
fn load_module_accepts_built_in_modules_only() {
    let (conf, output) = test_config(concat!(
        "load_module modules/ngx_http_map_module.so;\n",
        "load_module /usr/lib/nginx/modules/ngx_http_proxy_module.so;\n",
        "events {}\nhttp {}\n",
    ));
    output.assert_code(0);
    assert!(
        crate::support::cli::reported(
            &output.stderr,
            "notice",
            "load_module \"modules/ngx_http_map_module.so\": the \"http_map\" module is built \
             into Portico in {conf}:1"
                .replace("{conf}", &conf)
                .as_str(),
        ),
        "{}",
        output.stderr
    );
    // Debian's `modules-enabled/50-mod-stream.conf`.
    let (_, stream) =
        test_config("load_module modules/ngx_stream_module.so;\nevents {}\nstream {}\n");
    stream.assert_code(0);
    assert_fails(
        "load_module modules/ngx_stream_geoip_module.so;\nevents {}\n",
        "load_module \"modules/ngx_stream_geoip_module.so\": Portico has no \"stream_geoip\" module in {conf}:1",
    );
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

/// `-t` reports a configuration's own errors although the default error log cannot be
/// opened (no `logs/` under the prefix): the log failure is an [alert], not the end.
#[test]
fn a_missing_default_error_log_does_not_hide_the_configs_errors() {
    let prefix = crate::support::TempPrefix::new();
    prefix.write("portico.conf", "events {}\nhttp { bogus_directive on; }\n");
    let _ = std::fs::remove_dir_all(prefix.join("logs"));
    let arguments = ["-p", &prefix.arg(), "-c", "portico.conf", "-t"];
    let output = crate::support::cli::run_in(prefix.path(), &arguments);
    output.assert_code(1);
    assert!(
        output.stderr.contains("could not open error log file"),
        "{}",
        output.stderr
    );
    assert!(
        output
            .stderr
            .contains("unknown directive \"bogus_directive\""),
        "{}",
        output.stderr
    );
}

/// The hash sizing directives stock configs carry (`types_hash_max_size 2048;` in
/// Debian's): checked as nginx checks them, without effect (Portico's maps have no fixed
/// buckets).
#[test]
fn hash_sizes_are_checked() {
    let (_, output) = test_config(concat!(
        "events {}\nhttp {\n",
        "types_hash_max_size 2048; types_hash_bucket_size 64;\n",
        "variables_hash_max_size 1024; variables_hash_bucket_size 64;\n",
        "server_names_hash_max_size 1024; server_names_hash_bucket_size 64;\n",
        "}\n",
    ));
    output.assert_code(0);
    // Maximum sizes are numbers, bucket sizes are sizes, as in nginx.
    for (name, what) in [
        ("types_hash_max_size", "number"),
        ("types_hash_bucket_size", "value"),
        ("variables_hash_max_size", "number"),
        ("server_names_hash_bucket_size", "value"),
    ] {
        assert_http_body_fails(
            &format!("{name} big;"),
            &format!("\"{name}\" directive invalid {what} in {{conf}}:4"),
        );
    }
}
