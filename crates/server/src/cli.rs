//! The command line, exactly as nginx parses it: `portico [-?hvVtTq] [-s signal]
//! [-p prefix] [-e filename] [-c filename] [-g directives]`.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

/// What the command line asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub help: bool,
    /// `-v` (or `-V`): print the version.
    pub version: bool,
    /// `-V`: also print how Portico was built.
    pub build_info: bool,
    /// `-t`: test the configuration.
    pub test: bool,
    /// `-T`: test and dump the configuration.
    pub dump: bool,
    /// `-q`: only errors while testing.
    pub quiet: bool,
    pub signal: Option<Signal>,
    pub prefix: Option<OsString>,
    pub error_log: Option<OsString>,
    pub conf_file: Option<OsString>,
    pub directives: Option<String>,
}

/// `-s SIGNAL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Stop,
    Quit,
    Reopen,
    Reload,
}

impl Signal {
    /// The signal sent to the master, as nginx maps them.
    pub fn number(self) -> i32 {
        match self {
            Signal::Stop => libc::SIGTERM,
            Signal::Quit => libc::SIGQUIT,
            Signal::Reopen => libc::SIGUSR1,
            Signal::Reload => libc::SIGHUP,
        }
    }
}

/// nginx's messages for a bad command line; printed as `portico: MESSAGE`, exit status 1.
pub fn parse(arguments: impl IntoIterator<Item = OsString>) -> Result<Options, String> {
    let arguments: Vec<Vec<u8>> = arguments
        .into_iter()
        .skip(1)
        .map(OsStringExt::into_vec)
        .collect();
    let mut options = Options::default();
    let mut index = 0;
    while index < arguments.len() {
        let argument = &arguments[index];
        let text = String::from_utf8_lossy(argument);
        if argument.first() != Some(&b'-') {
            return Err(format!("invalid option: \"{text}\""));
        }
        let mut position = 1;
        while position < argument.len() {
            let flag = argument[position];
            position += 1;
            match flag {
                b'?' | b'h' => {
                    options.help = true;
                    options.version = true;
                }
                b'v' => options.version = true,
                b'V' => {
                    options.version = true;
                    options.build_info = true;
                }
                b't' => options.test = true,
                b'T' => {
                    options.test = true;
                    options.dump = true;
                }
                b'q' => options.quiet = true,
                b's' | b'p' | b'e' | b'c' | b'g' => {
                    let rest = &argument[position..];
                    let value = if !rest.is_empty() {
                        rest.to_vec()
                    } else if let Some(next) = arguments.get(index + 1) {
                        index += 1;
                        next.clone()
                    } else {
                        return Err(missing_value(flag));
                    };
                    apply_value(&mut options, flag, value)?;
                    break;
                }
                other => return Err(format!("invalid option: \"{}\"", char::from(other))),
            }
        }
        index += 1;
    }
    Ok(options)
}

fn missing_value(flag: u8) -> String {
    match flag {
        b's' => "option \"-s\" requires parameter".to_owned(),
        b'p' => "option \"-p\" requires directory name".to_owned(),
        b'e' => "option \"-e\" requires file name".to_owned(),
        b'c' => "option \"-c\" requires file name".to_owned(),
        _ => "option \"-g\" requires parameter".to_owned(),
    }
}

fn apply_value(options: &mut Options, flag: u8, value: Vec<u8>) -> Result<(), String> {
    match flag {
        b's' => {
            let signal = match value.as_slice() {
                b"stop" => Signal::Stop,
                b"quit" => Signal::Quit,
                b"reopen" => Signal::Reopen,
                b"reload" => Signal::Reload,
                other => {
                    return Err(format!(
                        "invalid option: \"-s {}\"",
                        String::from_utf8_lossy(other)
                    ));
                }
            };
            options.signal = Some(signal);
        }
        b'p' => options.prefix = Some(OsString::from_vec(value)),
        b'e' => options.error_log = Some(OsString::from_vec(value)),
        b'c' => options.conf_file = Some(OsString::from_vec(value)),
        _ => options.directives = Some(String::from_utf8_lossy(&value).into_owned()),
    }
    Ok(())
}

/// The compiled-in prefix, `/usr/local/portico/` unless `PORTICO_PREFIX` was set at build.
pub const DEFAULT_PREFIX: &str = match option_env!("PORTICO_PREFIX") {
    Some(prefix) => prefix,
    None => "/usr/local/portico/",
};
pub const DEFAULT_CONF_FILE: &str = "conf/portico.conf";
pub const DEFAULT_ERROR_LOG: &str = "logs/error.log";
pub const DEFAULT_PID_FILE: &str = "logs/portico.pid";

pub const VERSION_LINE: &str = concat!("portico version: portico/", env!("CARGO_PKG_VERSION"));

/// The usage text `-h` prints (after the version line), on stderr as nginx does.
pub fn help_text() -> String {
    let lines = [
        "Usage: portico [-?hvVtTq] [-s signal] [-p prefix]".to_owned(),
        "               [-e filename] [-c filename] [-g directives]".to_owned(),
        String::new(),
        "Options:".to_owned(),
        "  -?,-h         : this help".to_owned(),
        "  -v            : show version and exit".to_owned(),
        "  -V            : show version and configure options then exit".to_owned(),
        "  -t            : test configuration and exit".to_owned(),
        "  -T            : test configuration, dump it and exit".to_owned(),
        "  -q            : suppress non-error messages during configuration testing".to_owned(),
        "  -s signal     : send signal to a master process: stop, quit, reopen, reload".to_owned(),
        format!("  -p prefix     : set prefix path (default: {DEFAULT_PREFIX})"),
        format!("  -e filename   : set error log file (default: {DEFAULT_ERROR_LOG})"),
        format!("  -c filename   : set configuration file (default: {DEFAULT_CONF_FILE})"),
        "  -g directives : set global directives out of configuration file".to_owned(),
    ];
    let mut text = lines.join("\n");
    text.push_str("\n\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_args(arguments: &[&str]) -> Result<Options, String> {
        parse(
            std::iter::once("portico")
                .chain(arguments.iter().copied())
                .map(OsString::from),
        )
    }

    #[test]
    fn clustered_flags_and_values() {
        let options =
            parse_args(&["-tq", "-p", "/srv/", "-cconf/x.conf", "-g", "daemon off;"]).unwrap();
        assert!(options.test && options.quiet && !options.dump);
        assert_eq!(options.prefix, Some(OsString::from("/srv/")));
        assert_eq!(options.conf_file, Some(OsString::from("conf/x.conf")));
        assert_eq!(options.directives.as_deref(), Some("daemon off;"));
        let options = parse_args(&["-Ts", "reload"]).unwrap();
        assert!(options.test && options.dump);
        assert_eq!(options.signal, Some(Signal::Reload));
        assert!(parse_args(&["-V"]).unwrap().build_info);
        let help = parse_args(&["-?"]).unwrap();
        assert!(
            help.help && help.version,
            "help prints the version line first"
        );
    }

    #[test]
    fn help_keeps_its_layout() {
        let text = help_text();
        assert!(text.starts_with("Usage: portico [-?hvVtTq] [-s signal] [-p prefix]\n"));
        assert!(text.contains("\n               [-e filename] [-c filename] [-g directives]\n"));
        assert!(text.contains("\n  -?,-h         : this help\n"));
        assert!(text.ends_with("out of configuration file\n\n"));
    }

    #[test]
    fn errors_match_nginx() {
        assert_eq!(parse_args(&["x"]).unwrap_err(), "invalid option: \"x\"");
        assert_eq!(parse_args(&["-x"]).unwrap_err(), "invalid option: \"x\"");
        assert_eq!(parse_args(&["-tx"]).unwrap_err(), "invalid option: \"x\"");
        assert_eq!(parse_args(&["-xv"]).unwrap_err(), "invalid option: \"x\"");
        assert_eq!(parse_args(&["--"]).unwrap_err(), "invalid option: \"-\"");
        assert_eq!(
            parse_args(&["-"]).unwrap(),
            Options::default(),
            "nginx ignores a lone dash"
        );
        assert_eq!(
            parse_args(&["-s"]).unwrap_err(),
            "option \"-s\" requires parameter"
        );
        assert_eq!(
            parse_args(&["-s", "foo"]).unwrap_err(),
            "invalid option: \"-s foo\""
        );
        assert_eq!(
            parse_args(&["-p"]).unwrap_err(),
            "option \"-p\" requires directory name"
        );
        assert_eq!(
            parse_args(&["-c"]).unwrap_err(),
            "option \"-c\" requires file name"
        );
        assert_eq!(
            parse_args(&["-e"]).unwrap_err(),
            "option \"-e\" requires file name"
        );
        assert_eq!(
            parse_args(&["-g"]).unwrap_err(),
            "option \"-g\" requires parameter"
        );
        assert_eq!(
            parse_args(&["-v", "extra"]).unwrap_err(),
            "invalid option: \"extra\""
        );
    }
}
