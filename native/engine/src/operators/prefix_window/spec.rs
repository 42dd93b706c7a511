//! What one window operator evaluates (the planner's typed expressions, checked here against what the operator
//! evaluates exactly as Spark does and against Spark's result types), and the evaluation of a chunk of complete
//! partitions.
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, AsArray, Float64Array, Int64Array, Int8Array, RecordBatch};
use arrow::buffer::NullBuffer;
use arrow::compute::{cast, partition};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion_common::{internal_datafusion_err, Result};
use datafusion_physical_expr::PhysicalExpr;
use datafusion_physical_plan::metrics::Count;

use super::frames::{Bound, Frame, FrameUnit, Layout};
use super::prefix::{exact_double_partitions, Prefix};
use super::segment::{spill_blocker, whole_partition, Segmentation, DEFAULT_SEGMENT_ROWS};
use super::{extrema, ranking, refold};
use crate::error::plan_error;
use crate::expressions::Mode;

pub type PhysicalExprRef = Arc<dyn PhysicalExpr>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    RowNumber,
    Rank,
    DenseRank,
    Lag,
    Lead,
    Sum,
    Count,
    Avg,
    Min,
    Max,
}

/// One window expression.
#[derive(Debug)]
pub struct WindowExpr {
    pub name: String,
    pub function: Function,
    pub args: Vec<PhysicalExprRef>,
    /// SUM / AVG / COUNT over one argument: its measure in [`WindowSpec::measures`], shared by every frame over
    /// the same argument.
    pub measure: Option<usize>,
    /// LAG / LEAD: rows back (LAG) or ahead (LEAD).
    pub offset: i64,
    pub default: Option<PhysicalExprRef>,
    pub frame: Frame,
    pub result_type: DataType,
    pub ansi: bool,
    /// LAG ... IGNORE NULLS.
    pub ignore_nulls: bool,
}

impl WindowExpr {
    fn arg_type(&self, schema: &Schema) -> Result<DataType> {
        self.args[0].data_type(schema)
    }

    pub fn nullable(&self) -> bool {
        !matches!(self.function, Function::RowNumber | Function::Rank | Function::DenseRank | Function::Count)
    }

    /// Whether this expression's frames are evaluated from prefixes when prefix evaluation is on.
    fn integral_measure(&self, schema: &Schema) -> Result<bool> {
        Ok(matches!(self.function, Function::Sum | Function::Avg) && is_integral(&self.arg_type(schema)?))
    }
}

/// One argument shared by SUM / AVG / COUNT expressions.
#[derive(Debug)]
pub struct Measure {
    pub expr: PhysicalExprRef,
    /// Needs exact (128-bit) prefixes: an ANSI SUM or an AVG reads them.
    pub exact: bool,
    /// Some expression reads its prefixes (integral SUM / AVG, or COUNT).
    pub prefixed: bool,
}

/// The metrics of frame evaluation.
#[derive(Debug, Clone, Default)]
pub struct FrameCounters {
    /// Frames (output rows × window expressions) of SUM / COUNT / AVG evaluated by prefix difference.
    pub prefix: Count,
    /// Frames of SUM / COUNT / AVG evaluated by refold or add-and-retract.
    pub refold: Count,
    /// Partitions evaluated in segments (larger than a segment, and the spec allows).
    pub segmented_partitions: Count,
    /// Segments evaluated.
    pub segments: Count,
    /// Partitions spilled to disk (whole-partition aggregates folded on the way, the rest read back in segments).
    pub spilled_partitions: Count,
}

#[derive(Debug)]
pub struct WindowSpec {
    pub partition_by: Vec<PhysicalExprRef>,
    pub order_by: Vec<PhysicalExprRef>,
    pub exprs: Vec<WindowExpr>,
    pub measures: Vec<Measure>,
    pub prefix_enabled: bool,
    pub needs_peers: bool,
    /// Rows per segment of a partition evaluated in segments ([`super::segment`]).
    pub segment_rows: usize,
    /// How a large partition is evaluated in segments; `None` when some expression needs the whole partition.
    pub segmentation: Option<Segmentation>,
    /// When `segmentation` is `None` only because of whole-partition aggregates (UNBOUNDED PRECEDING AND
    /// UNBOUNDED FOLLOWING): how the other expressions of a spilled partition are evaluated in segments as its
    /// rows are read back ([`super::whole`]).
    pub spill: Option<Segmentation>,
    /// Otherwise, the expression that keeps a partition from being evaluated in segments or spilling.
    pub spill_blocker: Option<String>,
}

/// One window expression as the planner hands it over, before the operator checks it.
#[derive(Debug)]
pub struct WindowExprDef {
    /// Output column name; empty: `w<i>`.
    pub name: String,
    pub function: Function,
    pub args: Vec<PhysicalExprRef>,
    /// LAG / LEAD: rows back (LAG) or ahead (LEAD).
    pub offset: i64,
    /// LAG / LEAD default.
    pub default: Option<PhysicalExprRef>,
    /// The frame of an aggregate (SUM / COUNT / AVG / MIN / MAX); ignored for ranking and offset functions.
    pub frame: Option<Frame>,
    /// Spark's result type, checked against what the operator produces.
    pub result_type: DataType,
    pub mode: Mode,
    pub ignore_nulls: bool,
}

/// What the planner decodes for one window operator: keys (float keys already normalized as Spark's
/// `NormalizeNaNAndZero`), expressions, and the operator's knobs.
#[derive(Debug)]
pub struct WindowConfig {
    pub partition_by: Vec<PhysicalExprRef>,
    pub order_by: Vec<PhysicalExprRef>,
    pub exprs: Vec<WindowExprDef>,
    /// Integral sliding sums by prefix difference (`spark.ember.prefixWindow.prefixDifference.enabled`).
    pub prefix_enabled: bool,
    /// Rows per segment of a large partition; 0: [`DEFAULT_SEGMENT_ROWS`].
    pub segment_rows: usize,
}

pub(super) fn is_integral(dt: &DataType) -> bool {
    matches!(dt, DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64)
}

fn is_float(dt: &DataType) -> bool {
    matches!(dt, DataType::Float32 | DataType::Float64)
}

impl WindowSpec {
    /// Checks the planner's window over an input of `schema`. Anything not evaluated exactly as Spark does is a
    /// plan error, so the JVM side falls back.
    pub fn try_new(config: WindowConfig, schema: &Schema) -> Result<Self> {
        let WindowConfig { partition_by, order_by, exprs: defs, prefix_enabled, segment_rows } = config;
        let mut measures: Vec<Measure> = vec![];
        let mut exprs = vec![];
        for (i, x) in defs.into_iter().enumerate() {
            exprs.push(Self::check_expr(i, x, schema, prefix_enabled, &mut measures)?);
        }
        let needs_peers = exprs.iter().any(|x| {
            matches!(x.function, Function::Rank | Function::DenseRank)
                || (x.frame.unit == FrameUnit::Range
                    && (x.frame.lower == Bound::CurrentRow || x.frame.upper == Bound::CurrentRow))
        });
        let segmentation = Segmentation::of(&exprs, needs_peers);
        let spill = if segmentation.is_none() && exprs.iter().any(whole_partition) {
            Segmentation::of(exprs.iter().filter(|x| !whole_partition(x)), needs_peers)
        } else {
            None
        };
        let spill_blocker = spill_blocker(&exprs);
        let segment_rows = if segment_rows == 0 { DEFAULT_SEGMENT_ROWS } else { segment_rows.min(1 << 40) };
        Ok(Self {
            partition_by,
            order_by,
            exprs,
            measures,
            prefix_enabled,
            needs_peers,
            segment_rows,
            segmentation,
            spill,
            spill_blocker,
        })
    }

    fn check_expr(
        i: usize,
        x: WindowExprDef,
        schema: &Schema,
        prefix_enabled: bool,
        measures: &mut Vec<Measure>,
    ) -> Result<WindowExpr> {
        let WindowExprDef { name, function, args, offset, default, frame: def_frame, result_type, mode, ignore_nulls } =
            x;
        let name = if name.is_empty() { format!("w{i}") } else { name };
        let frame = || -> Result<Frame> {
            let f = def_frame.ok_or_else(|| plan_error("aggregate window expression without a frame"))?;
            f.validate()?;
            Ok(f)
        };
        let need_args = |n: usize| -> Result<()> {
            if args.len() == n {
                Ok(())
            } else {
                Err(plan_error(format!("{function:?} takes {n} argument(s), got {}", args.len())))
            }
        };
        // IGNORE NULLS: natively only for LAG with a positive offset (Spark's LEAD ... IGNORE NULLS asserts that
        // the offset is at most the partition's length, an internal error not reproduced here).
        if ignore_nulls && !matches!(function, Function::Lag | Function::Lead) {
            return Err(plan_error(format!("{function:?} IGNORE NULLS is not supported natively")));
        }
        // Offset 0 is the current row, nulls or not.
        let ignore_nulls = ignore_nulls && offset != 0;
        if ignore_nulls && !(function == Function::Lag && offset > 0) {
            return Err(plan_error(format!(
                "{function:?} IGNORE NULLS with offset {offset} is not supported natively"
            )));
        }
        let (frame, expected) = match function {
            Function::RowNumber | Function::Rank | Function::DenseRank => {
                need_args(0)?;
                (Frame::rows(Bound::UnboundedPreceding, Bound::CurrentRow), DataType::Int32)
            }
            Function::Lag | Function::Lead => {
                need_args(1)?;
                let t = args[0].data_type(schema)?;
                if let Some(d) = &default {
                    let dt = d.data_type(schema)?;
                    if dt != t && dt != DataType::Null {
                        return Err(plan_error(format!("{function:?} default is {dt}, its input {t}")));
                    }
                }
                (Frame::rows(Bound::UnboundedPreceding, Bound::UnboundedFollowing), t)
            }
            Function::Sum | Function::Avg => {
                need_args(1)?;
                let t = args[0].data_type(schema)?;
                if !is_integral(&t) && !is_float(&t) {
                    return Err(plan_error(format!("{function:?} over {t} is not supported natively")));
                }
                if mode == Mode::Try && function == Function::Sum && is_integral(&t) {
                    return Err(plan_error("try_sum is not supported natively"));
                }
                let rt = if function == Function::Sum && is_integral(&t) { DataType::Int64 } else { DataType::Float64 };
                (frame()?, rt)
            }
            Function::Count => (frame()?, DataType::Int64),
            Function::Min | Function::Max => {
                need_args(1)?;
                let t = args[0].data_type(schema)?;
                if !extrema::supported(&t) {
                    return Err(plan_error(format!("{function:?} over {t} is not supported natively")));
                }
                (frame()?, t)
            }
        };
        if result_type != expected {
            return Err(plan_error(format!(
                "{function:?} returns {expected} natively, the plan expects {result_type}"
            )));
        }
        let ansi = mode == Mode::Ansi;
        let mut expr =
            WindowExpr { name, function, args, measure: None, offset, default, frame, result_type, ansi, ignore_nulls };
        if matches!(function, Function::Sum | Function::Avg | Function::Count) && expr.args.len() == 1 {
            let integral = expr.integral_measure(schema)?;
            // Frames over the same argument share its measure (prefixes built once).
            let idx = match measures.iter().position(|m| m.expr.as_ref() == expr.args[0].as_ref()) {
                Some(idx) => idx,
                None => {
                    measures.push(Measure { expr: expr.args[0].clone(), exact: false, prefixed: false });
                    measures.len() - 1
                }
            };
            let m = &mut measures[idx];
            if prefix_enabled && (integral || function == Function::Count) {
                m.prefixed = true;
                m.exact |= (function == Function::Sum && ansi) || function == Function::Avg;
            }
            expr.measure = Some(idx);
        }
        Ok(expr)
    }

    pub fn output_fields(&self) -> Vec<Field> {
        self.exprs.iter().map(|x| Field::new(&x.name, x.result_type.clone(), x.nullable())).collect()
    }

    /// An upper estimate of the scratch memory a chunk needs per row while it is evaluated: frame bounds (16 B)
    /// and an output value (≤ 16 B) per expression, prefixes (≤ 24 B) and arguments (≤ 16 B) per measure, peers.
    pub fn scratch_bytes_per_row(&self) -> usize {
        32 * self.exprs.len() + 40 * self.measures.len() + if self.needs_peers { 8 } else { 0 }
    }

    pub(super) fn ranges(&self, keys: &[ArrayRef], n: usize) -> Result<Vec<Range<usize>>> {
        if keys.is_empty() {
            return Ok(if n == 0 { vec![] } else { std::iter::once(0..n).collect() });
        }
        Ok(partition(keys)?.ranges())
    }

    pub fn partition_keys(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        eval_all(&self.partition_by, batch)
    }

    /// Partition boundaries of a batch (ranges of rows with equal partition keys).
    pub fn partitions_of(&self, keys: &[ArrayRef], n: usize) -> Result<Vec<Range<usize>>> {
        self.ranges(keys, n)
    }

    /// Evaluates every window expression over a chunk of complete partitions. Under ANSI, also the first row at
    /// which Spark raises `ARITHMETIC_OVERFLOW` (it evaluates a row's frames when it produces the row, so the rows
    /// before it reach the consumer first); the column values from that row on are meaningless.
    pub fn evaluate(&self, chunk: &RecordBatch, counters: &FrameCounters) -> Result<(Vec<ArrayRef>, Option<usize>)> {
        let n = chunk.num_rows();
        let pkeys = self.partition_keys(chunk)?;
        let parts = self.ranges(&pkeys, n)?;
        let peers = if self.needs_peers {
            let mut keys = pkeys;
            keys.extend(eval_all(&self.order_by, chunk)?);
            self.ranges(&keys, n)?
        } else {
            vec![]
        };
        let layout = Layout::new(n, parts, peers);

        let (values, prefixes) = self.measures_of(chunk)?;

        // Frame bounds once per distinct frame, shared by every expression over it.
        let mut frames: HashMap<Frame, (Vec<usize>, Vec<usize>)> = HashMap::new();
        for x in &self.exprs {
            if matches!(x.function, Function::Sum | Function::Count | Function::Avg | Function::Min | Function::Max) {
                frames.entry(x.frame).or_insert_with(|| x.frame.bounds(&layout));
            }
        }
        let mut out = Vec::with_capacity(self.exprs.len());
        let mut overflow_at: Option<usize> = None;
        for x in &self.exprs {
            let bounds = |f: Frame| {
                let (s, e) = &frames[&f];
                (s.as_slice(), e.as_slice())
            };
            let (column, overflow) = self.evaluate_expr(x, chunk, &layout, &values, &prefixes, bounds, counters)?;
            out.push(column);
            overflow_at = match (overflow_at, overflow) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        Ok((out, overflow_at))
    }

    /// Measures: arguments evaluated once, prefixes built once, for all the frames over them.
    pub(super) fn measures_of(&self, chunk: &RecordBatch) -> Result<(Vec<ArrayRef>, Vec<Option<Prefix>>)> {
        let n = chunk.num_rows();
        let mut values: Vec<ArrayRef> = Vec::with_capacity(self.measures.len());
        let mut prefixes: Vec<Option<Prefix>> = Vec::with_capacity(self.measures.len());
        for m in &self.measures {
            let v = m.expr.evaluate(chunk)?.into_array(n)?;
            let prefix = if m.prefixed {
                let longs = if is_integral(v.data_type()) {
                    cast(&v, &DataType::Int64)?
                } else {
                    // COUNT over a non-integral measure: only the counts are read.
                    Arc::new(Int64Array::new(vec![0; n].into(), v.logical_nulls())) as ArrayRef
                };
                Some(Prefix::new(longs.as_primitive(), m.exact))
            } else {
                None
            };
            values.push(v);
            prefixes.push(prefix);
        }

        Ok((values, prefixes))
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn evaluate_expr<'a>(
        &self,
        x: &WindowExpr,
        chunk: &RecordBatch,
        layout: &Layout,
        values: &[ArrayRef],
        prefixes: &[Option<Prefix>],
        bounds: impl Fn(Frame) -> (&'a [usize], &'a [usize]),
        counters: &FrameCounters,
    ) -> Result<(ArrayRef, Option<usize>)> {
        let n = layout.len;
        let parts = &layout.partitions;
        let measure = x.measure.map(|m| (&values[m], prefixes[m].as_ref()));
        let mut overflow_at = None;
        let column: ArrayRef = match x.function {
            Function::RowNumber => ranking::row_number(layout),
            Function::Rank => ranking::rank(layout, false),
            Function::DenseRank => ranking::rank(layout, true),
            Function::Lag | Function::Lead => {
                let (v, default) = self.lag_inputs(x, chunk)?;
                if x.ignore_nulls {
                    ranking::lag_ignore_nulls(layout, &v, x.offset as usize, &default)?
                } else {
                    let shift = if x.function == Function::Lag { x.offset.saturating_neg() } else { x.offset };
                    ranking::shift(layout, &v, shift, &default)?
                }
            }
            Function::Min | Function::Max => {
                let v = x.args[0].evaluate(chunk)?.into_array(n)?;
                let (s, e) = bounds(x.frame);
                extrema::min_max(&v, parts, s, e, x.function == Function::Max)?
            }
            Function::Count => {
                let (s, e) = bounds(x.frame);
                match (x.args.len(), measure) {
                    (0, _) => {
                        counters.prefix.add(n);
                        Arc::new(Int64Array::from_iter_values(s.iter().zip(e).map(|(s, e)| (e - s) as i64)))
                    }
                    (_, Some((_, Some(p)))) => {
                        counters.prefix.add(n);
                        Arc::new(Int64Array::from_iter_values(s.iter().zip(e).map(|(&s, &e)| p.count(s, e) as i64)))
                    }
                    (_, Some((v, None))) => {
                        counters.refold.add(n);
                        Arc::new(refold::count_add_retract(v.as_ref(), s, e))
                    }
                    _ => {
                        // count(a, b, ...): rows where every argument is non-null.
                        let mut nulls: Option<NullBuffer> = None;
                        for a in &x.args {
                            let v = a.evaluate(chunk)?.into_array(n)?;
                            nulls = NullBuffer::union(nulls.as_ref(), v.logical_nulls().as_ref());
                        }
                        let marks = Int8Array::new(vec![0; n].into(), nulls);
                        counters.refold.add(n);
                        Arc::new(refold::count_add_retract(&marks, s, e))
                    }
                }
            }
            Function::Sum => {
                let (v, prefix) = measure.ok_or_else(|| internal_datafusion_err!("window: SUM without a measure"))?;
                let (s, e) = bounds(x.frame);
                if is_integral(v.data_type()) {
                    if let Some(p) = prefix {
                        counters.prefix.add(n);
                        let (sums, overflow) = p.sum(parts, s, e, x.ansi)?;
                        overflow_at = overflow;
                        Arc::new(sums)
                    } else {
                        counters.refold.add(n);
                        let longs = cast(v, &DataType::Int64)?;
                        if x.ansi {
                            let (sums, overflow) = refold::sum_refold(longs.as_primitive(), s, e, true);
                            overflow_at = overflow;
                            Arc::new(sums)
                        } else {
                            Arc::new(refold::sum_add_retract(longs.as_primitive(), s, e))
                        }
                    }
                } else {
                    counters.refold.add(n);
                    let doubles = cast(v, &DataType::Float64)?;
                    Arc::new(refold::sum_double(doubles.as_primitive(), s, e))
                }
            }
            Function::Avg => {
                let (v, prefix) = measure.ok_or_else(|| internal_datafusion_err!("window: AVG without a measure"))?;
                let (s, e) = bounds(x.frame);
                let doubles = cast(v, &DataType::Float64)?;
                let doubles: &Float64Array = doubles.as_primitive();
                let mut out = vec![0f64; n];
                let mut ok = vec![false; n];
                match prefix {
                    Some(p) if is_integral(v.data_type()) => {
                        let super::prefix::PrefixSums::Exact(sums) = &p.sums else {
                            unreachable!("AVG measures keep exact prefixes")
                        };
                        let longs = cast(v, &DataType::Int64)?;
                        let exact = exact_double_partitions(longs.as_primitive(), parts);
                        for (part, exact) in parts.iter().zip(exact) {
                            if exact {
                                counters.prefix.add(part.len());
                                for i in part.clone() {
                                    let c = p.count(s[i], e[i]);
                                    ok[i] = c > 0;
                                    out[i] = if c > 0 { (sums[e[i]] - sums[s[i]]) as f64 / c as f64 } else { 0.0 };
                                }
                            } else {
                                counters.refold.add(part.len());
                                refold::avg_double(doubles, part.clone(), s, e, &mut out, &mut ok);
                            }
                        }
                    }
                    _ => {
                        counters.refold.add(n);
                        refold::avg_double(doubles, 0..n, s, e, &mut out, &mut ok);
                    }
                }
                Arc::new(Float64Array::new(out.into(), Some(ok.into())))
            }
        };
        Ok((column, overflow_at))
    }
}

impl WindowSpec {
    /// LAG / LEAD: the argument and the default (evaluated on every row, NULL without one) over `chunk`.
    pub(super) fn lag_inputs(&self, x: &WindowExpr, chunk: &RecordBatch) -> Result<(ArrayRef, ArrayRef)> {
        let n = chunk.num_rows();
        let v = x.args[0].evaluate(chunk)?.into_array(n)?;
        let default = match &x.default {
            Some(d) => {
                let d = d.evaluate(chunk)?.into_array(n)?;
                if d.data_type() == v.data_type() {
                    d
                } else {
                    cast(&d, v.data_type())?
                }
            }
            None => new_null_array(v.data_type(), n),
        };
        Ok((v, default))
    }
}

pub(super) fn eval_all(exprs: &[PhysicalExprRef], batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
    exprs.iter().map(|e| e.evaluate(batch)?.into_array(batch.num_rows())).collect()
}
