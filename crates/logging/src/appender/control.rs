//! What the request threads ask of an appender's writer besides writing.

use crossbeam_channel::Sender;

/// What the writer is asked to do besides writing.
pub(crate) enum Control {
    /// Write everything claimed before index `.0`, flush the destination, then answer.
    Flush(u64, Sender<()>),
    /// Write everything that reaches the writer, flush, answer, and stop.
    Stop(Sender<()>),
}
