#![doc = include_str!("../README.md")]
//!
//! volley: a Gatling-style load tester whose numbers can be trusted.
//!
//! A run: [`scenario`] loads the YAML (with ferrowizard-config: every mistake with its line),
//! [`schedule`] says when each user comes, [`engine`] starts them and sends their requests,
//! over connections [`transport`] opens (HTTP/1.1 or HTTP/2, plain or TLS), judged by
//! [`checks`], with [`session`] variables and [`feeder`] records (a user's WebSocket and event
//! stream: [`stream`]), and records every
//! response into HDR histograms ([`stats`]); [`console`] prints Gatling's blocks, [`results`]
//! writes `results.json` and [`report`] the self-contained `index.html`; [`export`] writes
//! what CI reads beside them (the assertions as JUnit XML, the tables as CSV). A run may be
//! one [`shard`] of N, on N generators whose results merge into the whole run's; two runs'
//! results are set side by side, and judged against thresholds, by [`compare`].
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod assertions;
pub mod body;
pub mod checks;
pub mod compare;
pub mod console;
pub mod engine;
pub mod export;
pub mod feeder;
pub mod har;
pub mod live;
pub mod report;
pub mod results;
pub mod scenario;
pub mod schedule;
pub mod session;
pub mod shard;
pub mod stats;
pub mod stream;
pub mod template;
pub mod transport;
