//! The output layer: plain-text tables and number formats ([`text`]), SVG charts
//! ([`svg`]) and the progress of a long measurement on standard error ([`progress`]).

pub mod progress;
pub mod svg;
pub mod text;
