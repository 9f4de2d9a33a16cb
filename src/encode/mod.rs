//! The encode stage: model in, bytes out.

pub mod diff;
pub mod flamegraph_svg;
pub mod folded;
pub mod heap_top;
pub mod hprof;
pub mod labels;
pub mod module_symbols;
pub mod pprof;
pub mod summary;
pub mod timeline;
pub mod top;
