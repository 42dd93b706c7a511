//! Ember's window operator: Spark's `WindowExec` over input sorted by (partition keys, order keys), every
//! window expression over one (partition, order) spec in one pass, with **prefix-difference evaluation** of
//! integral sliding aggregates.
//!
//! # Algorithm
//! Input batches are buffered until partitions are complete (a row with other partition keys, or the end);
//! each chunk of complete partitions is concatenated once and evaluated column-wise ([`spec`]):
//! * every frame becomes a half-open row range `[start, end)` per row ([`frames`]): ROWS frames of every bound
//!   shape, RANGE frames bounded by UNBOUNDED / CURRENT ROW (peer groups); RANGE value offsets are a plan error;
//! * integral `SUM` / `COUNT` / `AVG` read one running prefix of sums and of non-null counts per measure
//!   ([`prefix`]), shared by every horizon over that measure: a frame costs two lookups, so H horizons cost
//!   H + 2 per row instead of Σ frame widths. LEGACY sums wrap in 64 bits (bit-identical to Spark's wrapping
//!   fold); ANSI sums keep exact 128-bit prefixes and raise `ARITHMETIC_OVERFLOW` exactly when one of the partial
//!   sums Spark's frame fold computes leaves the 64-bit range (sliding max / min of the prefix), after handing out
//!   the rows Spark would produce before the first overflowing frame (row-exact under a LIMIT); AVG uses the
//!   prefix only where the double fold is provably exact (partition Σ|v| ≤ 2^53), else re-folds;
//! * floating-point `SUM` / `AVG` re-fold each frame in Spark's order ([`refold`]); `MIN` / `MAX` use monotonic
//!   deques ([`extrema`]); `row_number`, `rank`, `dense_rank`, `lag` (also IGNORE NULLS), `lead` in
//!   [`ranking`].
//!
//! With prefix evaluation switched off (`Window.prefix_enabled = false`, the benchmark baseline), LEGACY integral
//! sums and counts use one add-and-retract accumulator per frame and ANSI sums a frame-by-frame checked fold.
//! Metrics `prefix_frames` / `refold_frames` count SUM / COUNT / AVG frames evaluated each way.
//!
//! # Memory
//! The rows of the open partition are held (and reserved through the memory pool) until it completes; a chunk of
//! complete partitions lives only while it is evaluated, and is reserved with an estimate of its scratch
//! (prefixes, frame bounds, output columns: O(rows × (measures + expressions))) for that time. Output batches are
//! slices of the evaluated chunk, handed on as they are pulled. Rows and scratch are two reservations: the rows'
//! can spill (a refusal is answered by segmenting or spilling), the scratch's cannot (a small segment may draw
//! on the pool's headroom while the rows hold the task's share); rows already read are accounted even when the
//! pool refuses them, as evaluating them is what gives memory back.
//!
//! When every expression needs only a bounded neighbourhood of each row (no UNBOUNDED FOLLOWING, RANGE frames
//! ending at the current row), an open partition longer than `Window.segment_rows` — or one the pool refuses to
//! hold — is evaluated in segments ([`segment`]): each segment with the rows its frames and offsets reach before
//! and after it, running folds / extrema / ranks and the last n non-null values of `lag(x, n) IGNORE NULLS`
//! carried across, bit for bit the
//! whole-partition result (ANSI overflow at the same row); segments shrink while the pool refuses their scratch.
//! Memory is then O(segment + lookback + lookahead) rows whatever the partition's length (metrics
//! `segmented_partitions`, `window_segments`).
//!
//! When the only expressions that need the whole partition are aggregates (SUM / COUNT / AVG / MIN / MAX) over
//! the whole partition (ROWS or RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING: `sum(x) OVER
//! (PARTITION BY k)`, `OVER ()`), an open partition the pool refuses **spills**: its rows go to an Arrow IPC spill
//! file (DataFusion's `SpillManager`, in full-size batches through [`crate::operators::spill`]) while those
//! aggregates fold over them forward, in Spark's order ([`whole`]: double sums keep Spark's bits, an ANSI
//! `ARITHMETIC_OVERFLOW` comes before any row of the partition, as Spark's `UnboundedWindowFunctionFrame`
//! raises it when the partition starts). Once the partition ends, the file is read back batch by batch and the
//! other expressions are evaluated in segments as above, the whole-partition columns filled with the folded
//! values; the input is read on after it. Memory is then one staging batch while spilling, and a segment with
//! its context while reading back, whatever the partition's length. The file is deleted when the partition is
//! read back, on error and on drop (metrics `spilled_partitions`, and DataFusion's `spill_count`,
//! `spilled_bytes`, `spilled_rows`).
//!
//! Other specs (frames from n PRECEDING / CURRENT ROW / n FOLLOWING to UNBOUNDED FOLLOWING, RANGE frames beyond
//! the peer group, offsets above 2^20) neither segment nor spill: a partition larger than
//! the pool grants is a `ResourcesExhausted` error naming the expression that keeps it in memory; so is a single
//! peer group larger than the pool when cuts must fall between peer groups (rank, dense_rank, RANGE frames).

/// The window's own metrics, by the names the JVM's SQL metrics use.
pub mod metric_names {
    metric_names!(
        PREFIX_FRAMES = "prefix_frames",
        REFOLD_FRAMES = "refold_frames",
        SEGMENTED_PARTITIONS = "segmented_partitions",
        WINDOW_SEGMENTS = "window_segments",
        SPILLED_PARTITIONS = "spilled_partitions",
    );
}
mod exec;
pub mod extrema;
pub mod frames;
pub mod prefix;
pub mod ranking;
pub mod refold;
pub mod segment;
pub mod spec;
mod stream;
pub mod whole;

pub use exec::PrefixWindowExec;
pub use frames::{Bound, Frame, FrameUnit};
pub use spec::{Function, WindowConfig, WindowExprDef, WindowSpec};
