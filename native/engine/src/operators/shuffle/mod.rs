//! The shuffle (proto `ShuffleWriter` on the map side, `Input` of kind shuffle blocks on the reduce side): the
//! map side's [`writer`] partitions, encodes and spills Arrow IPC blocks; the [`reader`] decodes the blocks Spark's
//! shuffle hands back (and the blocks of a broadcast).
pub mod reader;
pub mod writer;

pub use reader::ShuffleBlockReader;
pub use writer::{DropFilterSpec, KeySummarySpec, RangePartitioner, ShuffleWriterExec};
