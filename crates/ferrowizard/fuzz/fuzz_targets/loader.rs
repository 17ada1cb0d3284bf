//! Any input to the loader gives a value or a report, never a panic: the text as a config
//! file, and its first line also as a `--set` override.
#![no_main]

use ferrowizard::config::{FrameworkConfiguration, load_str};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let first = text.lines().next().unwrap_or("").to_owned();
    let _ = load_str::<FrameworkConfiguration>("fuzz.yaml", text, &[]);
    let _ = load_str::<FrameworkConfiguration>("fuzz.yaml", text, &[first]);
});
