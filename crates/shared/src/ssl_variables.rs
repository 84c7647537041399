//! The `$ssl_*` variables' values: facts of a connection's TLS handshake, the same for the
//! http and stream blocks.

use tls::HandshakeInfo;

/// One `$ssl_*` variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SslVariable {
    Protocol,
    Cipher,
    Ciphers,
    Curve,
    Curves,
    SessionId,
    SessionReused,
    ServerName,
    AlpnProtocol,
    EarlyData,
    ClientVerify,
    ClientSDn,
    ClientIDn,
    ClientSDnLegacy,
    ClientIDnLegacy,
    ClientSerial,
    ClientFingerprint,
    ClientCert,
    ClientRawCert,
    ClientEscapedCert,
    ClientVStart,
    ClientVEnd,
    ClientVRemain,
}

/// Appends the value; `false` is "not found" (a plain connection, or no such fact).
pub fn append(variable: SslVariable, info: Option<&HandshakeInfo>, out: &mut Vec<u8>) -> bool {
    use SslVariable as V;
    let Some(info) = info else {
        return false;
    };
    let text: &[u8] = match variable {
        V::Protocol => info.protocol.as_bytes(),
        V::Cipher => info.cipher.as_bytes(),
        V::Ciphers => {
            info.write_ciphers(out);
            return true;
        }
        V::Curve => info.curve.as_bytes(),
        V::Curves => {
            info.write_curves(out);
            return true;
        }
        V::SessionId => {
            info.write_session_id(out);
            return true;
        }
        V::SessionReused => {
            if info.resumed {
                b"r"
            } else {
                b"."
            }
        }
        V::ServerName => match info.server_name() {
            Some(name) => name.as_bytes(),
            None => return false,
        },
        V::AlpnProtocol => info.alpn().unwrap_or_default(),
        V::EarlyData => b"",
        _ => return append_client(variable, info, out),
    };
    out.extend_from_slice(text);
    true
}

fn append_client(variable: SslVariable, info: &HandshakeInfo, out: &mut Vec<u8>) -> bool {
    use SslVariable as V;
    let Some(certificate) = &info.client_certificate else {
        if variable == V::ClientVerify {
            out.extend_from_slice(b"NONE");
            return true;
        }
        return false;
    };
    if certificate.pem.is_empty() && variable != V::ClientVerify {
        return variable != V::ClientVRemain;
    }
    match variable {
        V::ClientVerify => out.extend_from_slice(certificate.verify.as_bytes()),
        V::ClientSDn => out.extend_from_slice(certificate.subject.as_bytes()),
        V::ClientIDn => out.extend_from_slice(certificate.issuer.as_bytes()),
        V::ClientSDnLegacy => out.extend_from_slice(certificate.subject_legacy.as_bytes()),
        V::ClientIDnLegacy => out.extend_from_slice(certificate.issuer_legacy.as_bytes()),
        V::ClientSerial => out.extend_from_slice(certificate.serial.as_bytes()),
        V::ClientFingerprint => out.extend_from_slice(certificate.fingerprint.as_bytes()),
        V::ClientRawCert => out.extend_from_slice(certificate.pem.as_bytes()),
        V::ClientCert => {
            // The deprecated form: every line after the first starts with a tab.
            let pem = certificate.pem.trim_end_matches('\n');
            out.extend_from_slice(pem.replace('\n', "\n\t").as_bytes());
            out.push(b'\n');
        }
        V::ClientEscapedCert => {
            for byte in certificate.pem.bytes() {
                if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
                    out.push(byte);
                } else {
                    out.extend_from_slice(format!("%{byte:02X}").as_bytes());
                }
            }
        }
        V::ClientVStart => out.extend_from_slice(certificate.not_before.as_bytes()),
        V::ClientVEnd => out.extend_from_slice(certificate.not_after.as_bytes()),
        V::ClientVRemain => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_secs() as i64);
            let days = (certificate.not_after_unix - now).max(0) / 86400;
            out.extend_from_slice(days.to_string().as_bytes());
        }
        _ => return false,
    }
    true
}
