//! The decode stage: bytes in, model out.

pub mod input;
pub mod perfetto;

pub use input::Input;
