//! Reading what a build made: facts read back from built files, not from the flags that made them.

pub mod fatbin;
