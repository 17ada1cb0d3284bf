//! The value types users write in DropWizard configs, with DropWizard's spellings.

mod duration;
pub(crate) mod level;
mod size;
mod text;

pub use duration::Duration;
pub use level::Level;
pub use size::Size;
