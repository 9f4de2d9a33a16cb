//! The `heapconv` command-line program: [`cli`] parses the arguments and runs one command of
//! [`heapconv::pipeline`].

use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    cli::main()
}
