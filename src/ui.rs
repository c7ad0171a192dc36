//! The only place that prints: progress and warnings go to stderr (stdout belongs to the
//! frontend's protocol).

pub(crate) fn status(line: &str) {
    eprintln!("cudawheel: {line}");
}

pub(crate) fn warn(line: &str) {
    eprintln!("cudawheel: warning: {line}");
}

/// The closing block of a build: its first line as a status line, the rest indented.
pub(crate) fn summary(lines: &[String]) {
    for (i, line) in lines.iter().enumerate() {
        if i == 0 {
            status(line);
        } else {
            eprintln!("  {line}");
        }
    }
}
