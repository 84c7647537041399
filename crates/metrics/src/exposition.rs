//! The Prometheus text exposition format 0.0.4 and OpenMetrics 1.0 text: families of
//! samples with `# HELP` and `# TYPE` lines. Counters are named by their family and written
//! with `_total`, as both formats want; OpenMetrics output ends with `# EOF`.

use std::fmt::Write as _;

/// Which text format a scrape gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `text/plain; version=0.0.4`.
    Prometheus,
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
}

impl Format {
    /// OpenMetrics when the scraper's `Accept` names it, else the classic format.
    pub fn from_accept(accept: &[u8]) -> Format {
        let wanted = accept
            .windows(b"application/openmetrics-text".len())
            .any(|window| window.eq_ignore_ascii_case(b"application/openmetrics-text"));
        if wanted {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// A metric family's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
    /// A constant 1 whose labels carry the information (`_info`).
    Info,
}

/// An exposition being written: families in order, each followed by its samples.
#[derive(Debug)]
pub struct Exposition {
    format: Format,
    out: String,
    /// The current family's base name and kind.
    family: String,
    kind: Kind,
}

impl Exposition {
    pub fn new(format: Format) -> Exposition {
        Exposition {
            format,
            out: String::with_capacity(16 * 1024),
            family: String::new(),
            kind: Kind::Gauge,
        }
    }

    /// Starts a family. `name` is the base name: without `_total` for a counter, without
    /// `_info` for an info family.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        self.family.clear();
        self.family.push_str(name);
        self.kind = kind;
        let (shown, type_name) = match (self.format, kind) {
            (Format::Prometheus, Kind::Counter) => (format!("{name}_total"), "counter"),
            (Format::Prometheus, Kind::Info) => (format!("{name}_info"), "gauge"),
            (Format::OpenMetrics, Kind::Counter) => (name.to_owned(), "counter"),
            (Format::OpenMetrics, Kind::Info) => (name.to_owned(), "info"),
            (_, Kind::Gauge) => (name.to_owned(), "gauge"),
            (_, Kind::Histogram) => (name.to_owned(), "histogram"),
        };
        let _ = writeln!(self.out, "# HELP {shown} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {shown} {type_name}");
    }

    /// A counter's sample.
    pub fn counter(&mut self, labels: &[(&str, &str)], value: f64) {
        debug_assert_eq!(self.kind, Kind::Counter);
        self.sample("_total", labels, None, value);
    }

    /// A gauge's sample.
    pub fn gauge(&mut self, labels: &[(&str, &str)], value: f64) {
        debug_assert_eq!(self.kind, Kind::Gauge);
        self.sample("", labels, None, value);
    }

    /// An info family's one sample.
    pub fn info(&mut self, labels: &[(&str, &str)]) {
        debug_assert_eq!(self.kind, Kind::Info);
        self.sample("_info", labels, None, 1.0);
    }

    /// A histogram: `bounds` (upper bounds, in the family's unit) with the count of
    /// observations in each bucket (not cumulative; one more for `+Inf`), and their sum.
    pub fn histogram(&mut self, labels: &[(&str, &str)], bounds: &[f64], counts: &[u64], sum: f64) {
        debug_assert_eq!(self.kind, Kind::Histogram);
        debug_assert_eq!(bounds.len() + 1, counts.len());
        let mut cumulative = 0u64;
        for (index, count) in counts.iter().enumerate() {
            cumulative += count;
            let bound = match bounds.get(index) {
                Some(bound) => format!("{bound:?}"),
                None => "+Inf".to_owned(),
            };
            self.sample("_bucket", labels, Some(&bound), cumulative as f64);
        }
        self.sample("_count", labels, None, cumulative as f64);
        self.sample("_sum", labels, None, sum);
    }

    fn sample(&mut self, suffix: &str, labels: &[(&str, &str)], le: Option<&str>, value: f64) {
        self.out.push_str(&self.family);
        self.out.push_str(suffix);
        if !labels.is_empty() || le.is_some() {
            self.out.push('{');
            let mut first = true;
            for (name, value) in labels.iter().chain(le.map(|le| ("le", le)).iter()) {
                if !first {
                    self.out.push(',');
                }
                first = false;
                self.out.push_str(name);
                self.out.push_str("=\"");
                escape_label(&mut self.out, value);
                self.out.push('"');
            }
            self.out.push('}');
        }
        self.out.push(' ');
        write_number(&mut self.out, value);
        self.out.push('\n');
    }

    /// The text, with OpenMetrics' closing line.
    pub fn finish(mut self) -> String {
        if self.format == Format::OpenMetrics {
            self.out.push_str("# EOF\n");
        }
        self.out
    }
}

fn write_number(out: &mut String, value: f64) {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e15 {
        let _ = write!(out, "{}", value as i64);
    } else if value.is_nan() {
        out.push_str("NaN");
    } else if value.is_infinite() {
        out.push_str(if value > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        let _ = write!(out, "{value}");
    }
}

fn escape_label(out: &mut String, value: &str) {
    for character in value.chars() {
        match character {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            other => out.push(other),
        }
    }
}

fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_format_names_counters_with_total() {
        let mut exposition = Exposition::new(Format::Prometheus);
        exposition.family("portico_requests", Kind::Counter, "Requests.");
        exposition.counter(&[], 3.0);
        exposition.family("portico_lag_seconds", Kind::Histogram, "Lag.");
        exposition.histogram(&[("worker", "0")], &[0.001, 1.0], &[2, 0, 1], 1.5);
        exposition.family("portico_build", Kind::Info, "Build.");
        exposition.info(&[("version", "a\"b")]);
        assert_eq!(
            exposition.finish(),
            "# HELP portico_requests_total Requests.\n\
             # TYPE portico_requests_total counter\n\
             portico_requests_total 3\n\
             # HELP portico_lag_seconds Lag.\n\
             # TYPE portico_lag_seconds histogram\n\
             portico_lag_seconds_bucket{worker=\"0\",le=\"0.001\"} 2\n\
             portico_lag_seconds_bucket{worker=\"0\",le=\"1.0\"} 2\n\
             portico_lag_seconds_bucket{worker=\"0\",le=\"+Inf\"} 3\n\
             portico_lag_seconds_count{worker=\"0\"} 3\n\
             portico_lag_seconds_sum{worker=\"0\"} 1.5\n\
             # HELP portico_build_info Build.\n\
             # TYPE portico_build_info gauge\n\
             portico_build_info{version=\"a\\\"b\"} 1\n"
        );
    }

    #[test]
    fn openmetrics_names_families_without_suffixes_and_ends_with_eof() {
        let mut exposition = Exposition::new(Format::OpenMetrics);
        exposition.family("portico_requests", Kind::Counter, "Requests.");
        exposition.counter(&[], 3.0);
        exposition.family("portico_build", Kind::Info, "Build.");
        exposition.info(&[]);
        assert_eq!(
            exposition.finish(),
            "# HELP portico_requests Requests.\n# TYPE portico_requests counter\n\
             portico_requests_total 3\n# HELP portico_build Build.\n# TYPE portico_build info\n\
             portico_build_info 1\n# EOF\n"
        );
    }

    #[test]
    fn accept_chooses_the_format() {
        let accept = b"application/openmetrics-text;version=1.0.0,text/plain;q=0.5";
        assert_eq!(Format::from_accept(accept), Format::OpenMetrics);
        assert_eq!(Format::from_accept(b"*/*"), Format::Prometheus);
    }
}
