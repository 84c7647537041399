//! `auth_basic`: HTTP Basic authentication against an htpasswd file (proxy
//! authentication for a CONNECT request, as nginx's). The file is read and
//! the password checked on the location's pool (the `default` pool under `aio off`), so a
//! slow hash (`$6$`, bcrypt-like settings of the system's crypt) never stalls the loop,
//! where nginx checks it on its worker.

pub mod directives;
mod password;
pub mod settings;

use logging::Level;

use crate::kernel::file::io::FileIo;
use crate::kernel::request::{ConnectionInfo, Request};
use crate::kernel::request_log::log;
use crate::kernel::variables::evaluate::render;
use crate::kernel::worker::HttpWorker;

/// What the check found.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No authentication here (`auth_basic off`, or no user file).
    NotInvolved,
    Passed,
    /// 401, with this realm in `WWW-Authenticate` (407 and `Proxy-Authenticate` for
    /// CONNECT).
    Challenge(Vec<u8>),
    /// Another status (403 for a missing user file, 500 for an unreadable one).
    Status(u16),
}

/// Checks the request's `Authorization: Basic` against the location's user file.
pub async fn check(
    worker: &HttpWorker,
    connection: &ConnectionInfo,
    request: &Request<'_>,
    location: &crate::kernel::conf::Location,
) -> Verdict {
    let settings = &location.settings.auth_basic;
    let (Some(realm), Some(file)) = (&settings.realm, &settings.user_file) else {
        return Verdict::NotInvolved;
    };
    let realm = render(worker, connection, request, realm);
    if realm == b"off" {
        return Verdict::NotInvolved;
    }
    let Some((user, password)) = credentials(request) else {
        log(
            worker,
            connection,
            request,
            Level::Info,
            format_args!("no user/password was provided for basic authentication"),
        );
        return Verdict::Challenge(realm);
    };
    let path = crate::kernel::pool_fs::path_from_vec(render(worker, connection, request, file));
    let io = crate::kernel::file::cache::file_io(worker, connection, request, location);
    let pool = match io {
        FileIo::Pool(pool) => pool,
        FileIo::Worker | FileIo::Missing(_) => worker.pools.default_pool().clone(),
    };
    let (file_path, wanted) = (path.clone(), user.clone());
    let outcome =
        crate::kernel::worker::offload_to(&pool, threadpool::TaskKind::Other, move || {
            let contents = crate::kernel::pool_fs::whole_file(&file_path)?;
            Ok::<_, std::io::Error>(
                find_user(&contents, &wanted).map(|hash| password::verify(&password, &hash)),
            )
        })
        .await;
    let user_text = String::from_utf8_lossy(&user);
    match outcome {
        Ok(Ok(Some(true))) => Verdict::Passed,
        Ok(Ok(Some(false))) => {
            log(
                worker,
                connection,
                request,
                Level::Error,
                format_args!("user \"{user_text}\": password mismatch"),
            );
            Verdict::Challenge(realm)
        }
        Ok(Ok(None)) => {
            log(
                worker,
                connection,
                request,
                Level::Error,
                format_args!(
                    "user \"{user_text}\" was not found in \"{}\"",
                    path.display()
                ),
            );
            Verdict::Challenge(realm)
        }
        Ok(Err(error)) => {
            let not_found = error.kind() == std::io::ErrorKind::NotFound;
            let (level, status) = if not_found {
                (Level::Error, 403)
            } else {
                (Level::Crit, 500)
            };
            log(
                worker,
                connection,
                request,
                level,
                format_args!(
                    "{}",
                    crate::kernel::file::open::failed_message(
                        "open()",
                        &path.to_string_lossy(),
                        error.raw_os_error().unwrap_or(0)
                    )
                ),
            );
            Verdict::Status(status)
        }
        Err(error) => {
            log(
                worker,
                connection,
                request,
                error.level,
                format_args!("{}", error.message),
            );
            Verdict::Status(500)
        }
    }
}

/// The user and password of `Authorization: Basic` (`Proxy-Authorization` for CONNECT),
/// as nginx decodes them.
fn credentials(request: &Request<'_>) -> Option<(Vec<u8>, Vec<u8>)> {
    let header = request.credentials_field()?;
    let scheme = header.get(..6)?;
    if !scheme.eq_ignore_ascii_case(b"Basic ") {
        return None;
    }
    let decoded =
        crate::kernel::variables::evaluate::decode_base64(header[6..].trim_ascii_start())?;
    let colon = memchr::memchr(b':', &decoded).filter(|colon| *colon > 0)?;
    Some((decoded[..colon].to_vec(), decoded[colon + 1..].to_vec()))
}

/// The stored hash of `user` in an htpasswd file (`user:hash[:comment]`, `#` comments).
fn find_user(contents: &[u8], user: &[u8]) -> Option<Vec<u8>> {
    contents.split(|b| *b == b'\n').find_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.starts_with(b"#") {
            return None;
        }
        let colon = memchr::memchr(b':', line)?;
        if &line[..colon] != user {
            return None;
        }
        let rest = &line[colon + 1..];
        let end = memchr::memchr(b':', rest).unwrap_or(rest.len());
        Some(rest[..end].to_vec())
    })
}

#[cfg(test)]
mod tests {
    use super::find_user;

    #[test]
    fn htpasswd_lines() {
        let file = b"# comment\nalice:{PLAIN}one:Alice\r\nbob:$apr1$x$y\n";
        assert_eq!(find_user(file, b"alice"), Some(b"{PLAIN}one".to_vec()));
        assert_eq!(find_user(file, b"bob"), Some(b"$apr1$x$y".to_vec()));
        assert_eq!(find_user(file, b"# comment"), None);
        assert_eq!(find_user(file, b"carol"), None);
    }
}
