//! The `$ssl_*` variables: facts of the connection's TLS handshake.

use shared::ssl_variables::{SslVariable, append};

use crate::kernel::variables::evaluate::VariableDef;

/// A table entry for `$NAME`, the fact `VARIANT` of the handshake.
macro_rules! ssl {
    ($name:literal, $variant:ident) => {
        VariableDef {
            name: $name,
            prefix: false,
            get: |variables, _, out| {
                append(
                    SslVariable::$variant,
                    variables.connection.tls.as_deref(),
                    out,
                )
            },
        }
    };
}

/// The `$ssl_*` variables: each reads its fact of the connection's handshake.
pub const VARIABLES: &[VariableDef] = &[
    ssl!("ssl_protocol", Protocol),
    ssl!("ssl_cipher", Cipher),
    ssl!("ssl_ciphers", Ciphers),
    ssl!("ssl_curve", Curve),
    ssl!("ssl_curves", Curves),
    ssl!("ssl_session_id", SessionId),
    ssl!("ssl_session_reused", SessionReused),
    ssl!("ssl_server_name", ServerName),
    ssl!("ssl_alpn_protocol", AlpnProtocol),
    ssl!("ssl_early_data", EarlyData),
    ssl!("ssl_client_verify", ClientVerify),
    ssl!("ssl_client_s_dn", ClientSDn),
    ssl!("ssl_client_i_dn", ClientIDn),
    ssl!("ssl_client_s_dn_legacy", ClientSDnLegacy),
    ssl!("ssl_client_i_dn_legacy", ClientIDnLegacy),
    ssl!("ssl_client_serial", ClientSerial),
    ssl!("ssl_client_fingerprint", ClientFingerprint),
    ssl!("ssl_client_cert", ClientCert),
    ssl!("ssl_client_raw_cert", ClientRawCert),
    ssl!("ssl_client_escaped_cert", ClientEscapedCert),
    ssl!("ssl_client_v_start", ClientVStart),
    ssl!("ssl_client_v_end", ClientVEnd),
    ssl!("ssl_client_v_remain", ClientVRemain),
];
