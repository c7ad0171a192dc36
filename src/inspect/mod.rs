//! Reading what a build made and what is installed: facts read back from files, not from the
//! flags that made them. Any stage may use these readers.

pub mod elf;
pub mod fatbin;
pub mod manylinux;
pub mod site;
