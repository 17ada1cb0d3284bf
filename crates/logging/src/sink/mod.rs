//! Where formatted bytes land: the writer thread's side.

pub mod console;
pub mod file;
pub mod net;
pub mod rolling;
pub mod tls;

/// A destination for batches of formatted lines. Only the writer thread touches it.
pub trait Sink: Send {
    /// Writes a batch; `line_ends` are the offsets where each line ends (for destinations
    /// that send one message per line).
    fn write(&mut self, batch: &[u8], line_ends: &[usize]) -> std::io::Result<()>;
    /// Pushes buffered bytes to the destination.
    fn flush(&mut self) -> std::io::Result<()>;
    /// A short description for error reports (`file app.log`).
    fn describe(&self) -> String;
}

/// Splits a batch into its lines (each with its trailing newline).
pub(crate) fn lines<'a>(
    batch: &'a [u8],
    line_ends: &'a [usize],
) -> impl Iterator<Item = &'a [u8]> + 'a {
    line_ends.iter().scan(0, move |start, &end| {
        let line = &batch[*start..end];
        *start = end;
        Some(line)
    })
}
