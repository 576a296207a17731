//! The child-process layer every subcommand that runs something uses: finding the
//! library and preparing an arm's environment ([`library`]), the library's settings as
//! options and as reported ([`settings`]), the load handshake ([`handshake`]), running a
//! child to completion and stopping it on an interrupt ([`child`]), and the machine it
//! ran on ([`machine`]).

pub mod child;
pub mod handshake;
pub mod library;
pub mod machine;
pub mod settings;
