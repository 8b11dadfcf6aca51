//! Where ROCm lives on disk: what a tree is ([`tree`]), which tree a process uses and every tree
//! on the machine ([`discover`]), a tree's device files ([`devfiles`]) and
//! whether they cover the device's target ([`kernels`]), and the in-process check
//! that what is really mapped comes from one tree ([`mapped`]). Pure filesystem logic, shared by
//! the supervisor (choosing the tree, `--rocm`, `probe`) and the ROCm backend (opening its
//! libraries from that tree): nothing here loads a library or touches a GPU.

pub mod devfiles;
pub mod discover;
pub mod elf;
pub mod kernels;
pub mod mapped;
pub mod tree;
