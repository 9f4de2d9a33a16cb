//! Deterministic generators of heapconv's test data, kept out of the product: the tests,
//! benchmarks, examples and fuzz targets depend on this crate, heapconv does not.
//!
//! * [`heapprofd`]: synthetic heapprofd traces laid out as heapprofd writes them (also the
//!   `synth` binary: `cargo run --release -p heapconv-testdata --bin synth -- -o t.pftrace`);
//! * [`hprof`]: hprof files byte by byte, a small Android sample with every record, and large
//!   synthetic dumps;
//! * [`heap_dump`]: a large synthetic Java heap built directly as heapconv's model;
//! * [`ddm`]: DDM allocation-record captures and their chunk and JDWP framings;
//! * [`protowire`]: the protobuf wire writer, and [`rng`]: the pseudo-random generators they
//!   all draw from.
//!
//! The same parameters always give the same bytes: fixtures, goldens and benchmark inputs depend
//! on it.

pub mod ddm;
pub mod heap_dump;
pub mod heapprofd;
pub mod hprof;
pub mod protowire;
pub mod rng;
