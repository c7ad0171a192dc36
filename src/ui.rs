//! The only place that prints: progress and warnings go to stderr (stdout belongs to the
//! frontend's protocol).

pub fn status(line: &str) {
    eprintln!("cudawheel: {line}");
}

pub fn warn(line: &str) {
    eprintln!("cudawheel: warning: {line}");
}
