//! The `robit-sim` binary, end to end: the simulation commands, and the operator
//! commands against a real redis-server.

mod cli;
mod cli_operator;
