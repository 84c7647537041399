//! `ssl_certificate`, `ssl_certificate_key` and `ssl_password_file`: pairs chosen by the
//! client's abilities, `data:` values, chains, encrypted keys, and nginx's errors.

use rustls::SignatureScheme;

use crate::support::Instance;
use crate::support::cli::{assert_fails, test_http_body};
use crate::support::tls::{self, Key, Options, have_openssl};

fn offering(schemes: &[SignatureScheme]) -> Options {
    Options {
        schemes: Some(schemes.to_vec()),
        ..Options::default()
    }
}

#[test]
fn rsa_and_ecdsa_pairs_are_chosen_by_what_the_client_takes() {
    if !have_openssl() {
        return;
    }
    let server = tls::with_files(
        Instance::http_builder(
            "server { listen 127.0.0.1:8443 ssl;
                ssl_certificate rsa.crt; ssl_certificate_key rsa.key;
                ssl_certificate ecdsa.crt; ssl_certificate_key ecdsa.key;
                location / { return 200 ok; } }",
        ),
        |directory| {
            tls::self_signed(directory, "rsa", Key::Rsa);
            tls::self_signed(directory, "ecdsa", Key::Ecdsa);
        },
    )
    .start();
    let port = server.port_of(8443);
    let ecdsa_only = offering(&[SignatureScheme::ECDSA_NISTP256_SHA256]);
    let client = tls::connect(port, &ecdsa_only).expect("an ECDSA handshake");
    assert_eq!(tls::peer_common_name(&client), "ecdsa");
    let rsa_only = offering(&[
        SignatureScheme::RSA_PSS_SHA256,
        SignatureScheme::RSA_PKCS1_SHA256,
    ]);
    let client = tls::connect(port, &rsa_only).expect("an RSA handshake");
    assert_eq!(tls::peer_common_name(&client), "rsa");
}

#[test]
fn data_values_hold_the_pem_itself() {
    if !have_openssl() {
        return;
    }
    let scratch = crate::support::TempPrefix::new();
    tls::self_signed(scratch.path(), "inline", Key::Ecdsa);
    let certificate = scratch.read("inline.crt");
    let key = scratch.read("inline.key");
    let server = Instance::http(&format!(
        "server {{ listen 127.0.0.1:8443 ssl;
            ssl_certificate 'data:{certificate}'; ssl_certificate_key 'data:{key}';
            location / {{ return 200 ok; }} }}"
    ));
    let client = tls::connect(server.port_of(8443), &Options::default()).expect("handshake");
    assert_eq!(tls::peer_common_name(&client), "inline");
}

#[test]
fn a_chain_file_sends_the_intermediate_too() {
    if !have_openssl() {
        return;
    }
    let server = tls::with_files(
        Instance::http_builder(
            "server { listen 127.0.0.1:8443 ssl;
                ssl_certificate chain.crt; ssl_certificate_key leaf.key;
                location / { return 200 ok; } }",
        ),
        |directory| {
            tls::authority(directory, "ca");
            tls::issued(directory, "leaf", "ca", (-1, 1));
            let chain = [
                std::fs::read(directory.join("leaf.crt")).expect("leaf"),
                std::fs::read(directory.join("ca.crt")).expect("ca"),
            ]
            .concat();
            std::fs::write(directory.join("chain.crt"), chain).expect("write the chain");
        },
    )
    .start();
    let client = tls::connect(server.port_of(8443), &Options::default()).expect("handshake");
    assert_eq!(tls::peer_chain_len(&client), 2);
    assert_eq!(tls::peer_common_name(&client), "leaf");
}

#[test]
fn a_key_of_another_certificate_fails_with_nginx_message() {
    if !have_openssl() {
        return;
    }
    let scratch = crate::support::TempPrefix::new();
    tls::self_signed(scratch.path(), "one", Key::Rsa);
    tls::self_signed(scratch.path(), "two", Key::Rsa);
    let directory = scratch.path().display();
    let (_, output) = test_http_body(&format!(
        "server {{ listen 127.0.0.1:8443 ssl;
            ssl_certificate {directory}/one.crt; ssl_certificate_key {directory}/two.key; }}"
    ));
    output.assert_code(1);
    let expected = format!(
        "SSL_CTX_use_PrivateKey(\"{directory}/two.key\") failed (SSL: error:05800074:x509 \
         certificate routines::key values mismatch)"
    );
    assert!(output.stderr.contains(&expected), "{}", output.stderr);
}

#[test]
fn a_missing_certificate_file_fails() {
    assert_fails(
        "events {}\nhttp { server { listen 127.0.0.1:8443 ssl;
            ssl_certificate /nonexistent/x.crt; ssl_certificate_key /nonexistent/x.key; } }\n",
        "cannot load certificate \"/nonexistent/x.crt\": BIO_new_file() failed (SSL: \
         error:80000002:system library::No such file or directory:calling fopen(/nonexistent/x.crt, \
         r))",
    );
}

#[test]
fn a_certificate_without_a_key_fails() {
    if !have_openssl() {
        return;
    }
    let scratch = crate::support::TempPrefix::new();
    tls::self_signed(scratch.path(), "one", Key::Rsa);
    let directory = scratch.path().display();
    let (_, output) = test_http_body(&format!(
        "server {{ listen 127.0.0.1:8443 ssl; ssl_certificate {directory}/one.crt; }}"
    ));
    output.assert_code(1);
    assert!(
        output.stderr.contains(&format!(
            "no \"ssl_certificate_key\" is defined for certificate \"{directory}/one.crt\""
        )),
        "{}",
        output.stderr
    );
}

/// Makes `secret.crt` and `secret.key`, the key encrypted with the password `right`.
fn encrypted_pair(directory: &std::path::Path) {
    tls::self_signed(directory, "secret", Key::Rsa);
    let status = std::process::Command::new("openssl")
        .current_dir(directory)
        .args([
            "pkcs8",
            "-topk8",
            "-in",
            "secret.key",
            "-out",
            "secret.enc",
            "-passout",
            "pass:right",
        ])
        .status()
        .expect("run openssl pkcs8");
    assert!(status.success());
    std::fs::rename(directory.join("secret.enc"), directory.join("secret.key"))
        .expect("replace the key");
}

#[test]
fn ssl_password_file_opens_an_encrypted_key() {
    if !have_openssl() {
        return;
    }
    let server = tls::with_files(
        Instance::http_builder(
            "server { listen 127.0.0.1:8443 ssl;
                ssl_certificate secret.crt; ssl_certificate_key secret.key;
                ssl_password_file %%PREFIX%%/passwords;
                location / { return 200 ok; } }",
        ),
        encrypted_pair,
    )
    .file("passwords", "wrong\r\nright\n")
    .start();
    let response = tls::get(server.port_of(8443), &Options::default(), "/");
    assert_eq!(response.body_text(), "ok");
}

#[test]
fn a_wrong_password_fails_the_load() {
    if !have_openssl() {
        return;
    }
    let scratch = crate::support::TempPrefix::new();
    encrypted_pair(scratch.path());
    scratch.write("passwords", "wrong\n");
    let directory = scratch.path().display();
    let (_, output) = test_http_body(&format!(
        "server {{ listen 127.0.0.1:8443 ssl;
            ssl_certificate {directory}/secret.crt; ssl_certificate_key {directory}/secret.key;
            ssl_password_file {directory}/passwords; }}"
    ));
    output.assert_code(1);
    assert!(
        output.stderr.contains(&format!(
            "cannot load certificate key \"{directory}/secret.key\": PEM_read_bio_PrivateKey() \
             failed (SSL: error:1C800064:Provider routines::bad decrypt)"
        )),
        "{}",
        output.stderr
    );
}
