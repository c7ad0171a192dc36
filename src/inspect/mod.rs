//! Reading what a build made and what is installed: facts read back from files, not from the
//! flags that made them. Any stage may use these readers.

pub(crate) mod elf;
pub(crate) mod fatbin;
pub(crate) mod manylinux;
pub(crate) mod site;
