//! `Hint`: what a user can do about an error. Every stage's error type implements it; it lives
//! apart from `error.rs` (which gathers every stage's error) so a stage needs only this trait.

/// Something a user can do about an error: each string becomes one `hint:` line.
pub(crate) trait Hint {
    fn hints(&self) -> Vec<String> {
        Vec::new()
    }
}
