//! Compiles `protos/*.proto` into Rust types without `protoc`: `protobuf-parse` (pure Rust)
//! parses the files into a `FileDescriptorSet`, which `prost-build` turns into code.

use std::path::PathBuf;

use prost::Message as _;
use protobuf::Message as _;

fn main() {
    let files = ["protos/perfetto_trace.proto", "protos/profile.proto"];
    for f in &files {
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rerun-if-changed=build.rs");

    let parsed = protobuf_parse::Parser::new()
        .pure()
        .include("protos")
        .inputs(files.iter().map(PathBuf::from))
        .parse_and_typecheck()
        .expect("protos/ must parse");
    let mut set = protobuf::descriptor::FileDescriptorSet::new();
    set.file = parsed.file_descriptors;
    let bytes = set.write_to_bytes().expect("descriptor set serializes");
    let fds = prost_types::FileDescriptorSet::decode(bytes.as_slice()).expect("descriptor set decodes");

    prost_build::Config::new()
        // Written by hand (src/proto/callstack.rs): the same message, decoded faster.
        .extern_path(".perfetto.protos.Callstack", "crate::proto::callstack::Callstack")
        .compile_fds(fds)
        .expect("prost-build generates code");
}
