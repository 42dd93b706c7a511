//! [`DynamicFilter`]: what a join's build side knows about its keys, per partition, so that probe rows (and,
//! later, row groups and shuffle rows) that cannot match are dropped before they cost anything.
//!
//! **Summary of one partition** ([`KeySummary`]): the number of build rows summarized; per key column the
//! minimum and maximum of its values (only for types whose [`ScalarValue`] order is the order the join's equality
//! agrees with: integers, decimals, dates, times, timestamps, strings, binaries, booleans — not floats, whose
//! NaN and -0.0 make that subtle); and the keys themselves, row-encoded with Arrow's `RowConverter` (equal keys
//! encode to equal bytes), in an exact set up to `max_set_values` distinct keys, then in a split-block bloom
//! filter (the `parquet` crate's `Sbbf`, `bloom_bytes` large, xxh64 of the encoded key) into which the set is
//! poured. A probe key passes when it has no null, lies within every column's bounds and is in the set (or,
//! past the set, in the bloom filter). So a filter has no false negatives; its false positives come from the
//! bounds (keys between the build keys) and from the bloom filter.
//!
//! **Nulls.** The summary is for null-rejecting equality (`=`, not `<=>`): a build row with a null key can match
//! nothing and is not summarized; a probe key with a null never passes. A join with null-safe keys must not use
//! it.
//!
//! **Union.** Two filters over the same keys and partitioning unite partition by partition: rows added, bounds
//! widened, sets united (overflowing into a bloom filter), bloom filters OR-ed (both are `bloom_bytes` large, so
//! their blocks line up). [`DynamicFilter::global`] unites all partitions into one, the filter for a consumer
//! that does not know a row's partition (a scan's row groups). A key passes a union exactly when it passes one
//! of the parts, up to the bloom filter's and the bounds' false positives.
//!
//! **Proto form.** [`DynamicFilter::to_parts`] / [`DynamicFilter::from_parts`] expose plain data; the planner
//! encodes it as the proto `DynamicFilter` (operators never read the proto), so summaries made by many tasks can be
//! merged on the driver. The row encoding is Arrow's: every executor runs the same library.
use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, BooleanBufferBuilder, UInt32Array};
use arrow::buffer::NullBuffer;
use arrow::compute::kernels::cmp::{gt_eq, lt_eq};
use arrow::compute::{and, filter, take};
use arrow::datatypes::{DataType, Field};
use arrow::row::{RowConverter, SortField};
use datafusion_common::hash_utils::RandomState;
use datafusion_common::{internal_err, Result, ScalarValue};
use datafusion_expr::Accumulator;
use datafusion_functions_aggregate::min_max::{MaxAccumulator, MinAccumulator};
use parquet::bloom_filter::Sbbf;

use super::parquet_scan::{FilterOp, ScanFilter};

/// Sizes of a filter's summaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynamicFilterConfig {
    /// Distinct keys kept exactly per partition; beyond, a bloom filter.
    pub max_set_values: usize,
    /// Size of a partition's bloom filter (rounded to a power of two, at least 32 bytes).
    pub bloom_bytes: usize,
}

impl Default for DynamicFilterConfig {
    fn default() -> Self {
        Self { max_set_values: 4096, bloom_bytes: 1 << 20 }
    }
}

/// The keys of one partition (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct KeySummary {
    /// Build rows with null-free keys summarized.
    pub rows: u64,
    /// Per key column: (min, max); `None` for a type without bounds or while no row was seen.
    pub bounds: Vec<Option<(ScalarValue, ScalarValue)>>,
    /// The row-encoded distinct keys while there are at most `max_set_values` of them.
    set: HashSet<Box<[u8]>, RandomState>,
    /// Once the set overflowed: every key in a bloom filter (and the set is empty).
    bloom: Option<Sbbf>,
}

impl KeySummary {
    fn empty(columns: usize) -> Self {
        Self { rows: 0, bounds: vec![None; columns], set: HashSet::default(), bloom: None }
    }

    /// Bytes held (for the pool).
    pub fn size(&self) -> usize {
        let set: usize = self.set.iter().map(|k| k.len() + 16).sum();
        let bloom = self.bloom.as_ref().map_or(0, |b| b.num_blocks() * 32);
        set + bloom + self.bounds.len() * 2 * std::mem::size_of::<ScalarValue>()
    }

    /// Distinct keys kept exactly, or `None` once a bloom filter holds them.
    pub fn exact_keys(&self) -> Option<usize> {
        self.bloom.is_none().then_some(self.set.len())
    }

    fn insert(&mut self, key: &[u8], config: &DynamicFilterConfig) {
        match &mut self.bloom {
            Some(bloom) => bloom.insert(key),
            None => {
                if !self.set.contains(key) {
                    self.set.insert(key.into());
                    if self.set.len() > config.max_set_values {
                        self.overflow(config);
                    }
                }
            }
        }
    }

    /// Pours the set into a bloom filter.
    fn overflow(&mut self, config: &DynamicFilterConfig) {
        let mut bloom = Sbbf::new_with_num_of_bytes(config.bloom_bytes);
        for k in self.set.drain() {
            bloom.insert(&k[..]);
        }
        self.set.shrink_to_fit();
        self.bloom = Some(bloom);
    }

    fn contains(&self, key: &[u8]) -> bool {
        match &self.bloom {
            Some(bloom) => bloom.check(key),
            None => self.set.contains(key),
        }
    }

    fn widen(&mut self, column: usize, min: ScalarValue, max: ScalarValue) {
        self.bounds[column] = Some(match self.bounds[column].take() {
            None => (min, max),
            Some((lo, hi)) => {
                let lo = if min.partial_cmp(&lo) == Some(std::cmp::Ordering::Less) { min } else { lo };
                let hi = if max.partial_cmp(&hi) == Some(std::cmp::Ordering::Greater) { max } else { hi };
                (lo, hi)
            }
        });
    }

    /// Adds `other`'s keys to this summary.
    fn absorb(&mut self, other: &KeySummary, config: &DynamicFilterConfig) -> Result<()> {
        self.rows += other.rows;
        for (c, b) in other.bounds.iter().enumerate() {
            if let Some((lo, hi)) = b {
                self.widen(c, lo.clone(), hi.clone());
            }
        }
        match (&mut self.bloom, &other.bloom) {
            (Some(mine), Some(theirs)) => *mine = or_blooms(mine, theirs)?,
            (None, Some(theirs)) => {
                let mut bloom = theirs.clone();
                for k in self.set.drain() {
                    bloom.insert(&k[..]);
                }
                self.bloom = Some(bloom);
            }
            (_, None) => {
                for k in &other.set {
                    self.insert(k, config);
                }
            }
        }
        Ok(())
    }
}

fn bloom_bytes(b: &Sbbf) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(b.num_blocks() * 32);
    if let Err(e) = b.write_bitset(&mut out) {
        return internal_err!("dynamic filter: writing a bloom filter: {e}");
    }
    Ok(out)
}

fn or_blooms(a: &Sbbf, b: &Sbbf) -> Result<Sbbf> {
    if a.num_blocks() != b.num_blocks() {
        return internal_err!(
            "dynamic filter: bloom filters of {} and {} blocks cannot be united",
            a.num_blocks(),
            b.num_blocks()
        );
    }
    let mut x = bloom_bytes(a)?;
    for (x, y) in x.iter_mut().zip(bloom_bytes(b)?) {
        *x |= y;
    }
    Ok(Sbbf::new(&x))
}

/// Whether the join's equality agrees with [`ScalarValue`]'s order on `dt` (so min/max bound the keys) and with
/// the row format's bytes (so the set and the bloom filter hold). Not floats: a hash join equates -0.0 and 0.0,
/// whose bits differ (Spark normalizes float keys, but the filter does not rely on it).
pub fn exact_key_type(dt: &DataType) -> bool {
    use DataType::*;
    matches!(
        dt,
        Boolean
            | Int8
            | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(_, _)
            | Decimal128(_, _)
            | Decimal256(_, _)
            | Utf8
            | LargeUtf8
            | Utf8View
            | Binary
            | LargeBinary
            | BinaryView
    )
}

/// A summary per partition of a join's build keys (see the module doc).
#[derive(Debug)]
pub struct DynamicFilter {
    key_types: Vec<DataType>,
    config: DynamicFilterConfig,
    converter: RowConverter,
    partitions: Vec<KeySummary>,
}

/// [`DynamicFilter`] as plain data (the proto form's content).
#[derive(Debug, Clone)]
pub struct DynamicFilterParts {
    pub key_types: Vec<DataType>,
    pub config: DynamicFilterConfig,
    pub partitions: Vec<KeySummaryParts>,
}

/// [`KeySummary`] as plain data.
#[derive(Debug, Clone, Default)]
pub struct KeySummaryParts {
    pub rows: u64,
    pub bounds: Vec<Option<(ScalarValue, ScalarValue)>>,
    /// Row-encoded keys (when `bloom` is `None`).
    pub set: Vec<Vec<u8>>,
    /// The bloom filter's bitset.
    pub bloom: Option<Vec<u8>>,
}

impl DynamicFilter {
    /// An empty filter (passing nothing) over keys of `key_types`, with `partitions` partitions.
    pub fn try_new(key_types: Vec<DataType>, partitions: usize, config: DynamicFilterConfig) -> Result<Self> {
        if key_types.is_empty() || partitions == 0 {
            return internal_err!("dynamic filter: needs at least one key and one partition");
        }
        if config.max_set_values == 0 && config.bloom_bytes == 0 {
            return internal_err!("dynamic filter: needs a set or a bloom filter");
        }
        let converter = RowConverter::new(key_types.iter().map(|t| SortField::new(t.clone())).collect())?;
        let columns = key_types.len();
        Ok(Self { key_types, config, converter, partitions: vec![KeySummary::empty(columns); partitions] })
    }

    pub fn key_types(&self) -> &[DataType] {
        &self.key_types
    }

    pub fn config(&self) -> DynamicFilterConfig {
        self.config
    }

    pub fn num_partitions(&self) -> usize {
        self.partitions.len()
    }

    /// Bytes held by the summaries.
    pub fn size(&self) -> usize {
        self.partitions.iter().map(KeySummary::size).sum()
    }

    /// The summary of `partition`.
    pub fn summary(&self, partition: usize) -> Option<&KeySummary> {
        self.partitions.get(partition)
    }

    fn check_keys(&self, keys: &[ArrayRef]) -> Result<usize> {
        if keys.len() != self.key_types.len() {
            return internal_err!("dynamic filter: {} key columns, expected {}", keys.len(), self.key_types.len());
        }
        for (k, t) in keys.iter().zip(&self.key_types) {
            if k.data_type() != t {
                return internal_err!("dynamic filter: key of type {}, expected {t}", k.data_type());
            }
        }
        Ok(keys.first().map_or(0, |k| k.len()))
    }

    /// Adds build keys (one array per key column) to `partition`'s summary. Rows with a null key are skipped.
    pub fn update(&mut self, partition: usize, keys: &[ArrayRef]) -> Result<()> {
        let rows = self.check_keys(keys)?;
        if partition >= self.partitions.len() {
            return internal_err!("dynamic filter: partition {partition} of {}", self.partitions.len());
        }
        let keys = match null_free(keys, rows) {
            None => keys.to_vec(),
            Some(mask) => keys.iter().map(|k| filter(k.as_ref(), &mask)).collect::<Result<Vec<_>, _>>()?,
        };
        let rows = keys[0].len();
        if rows == 0 {
            return Ok(());
        }
        let summary = &mut self.partitions[partition];
        summary.rows += rows as u64;
        for (c, k) in keys.iter().enumerate() {
            if !exact_key_type(k.data_type()) {
                continue;
            }
            let mut min = MinAccumulator::try_new(k.data_type())?;
            let mut max = MaxAccumulator::try_new(k.data_type())?;
            min.update_batch(std::slice::from_ref(k))?;
            max.update_batch(std::slice::from_ref(k))?;
            summary.widen(c, min.evaluate()?, max.evaluate()?);
        }
        let encoded = self.converter.convert_columns(&keys)?;
        for row in encoded.iter() {
            summary.insert(row.as_ref(), &self.config);
        }
        Ok(())
    }

    /// The filter of one partition, as a one-partition filter.
    pub fn filter_of(&self, partition: usize) -> Result<DynamicFilter> {
        let Some(s) = self.partitions.get(partition) else {
            return internal_err!("dynamic filter: partition {partition} of {}", self.partitions.len());
        };
        let mut f = Self::try_new(self.key_types.clone(), 1, self.config)?;
        f.partitions[0] = s.clone();
        Ok(f)
    }

    /// All partitions united: the filter for a consumer that does not know a row's partition.
    pub fn global(&self) -> Result<DynamicFilter> {
        let mut f = Self::try_new(self.key_types.clone(), 1, self.config)?;
        for s in &self.partitions {
            f.partitions[0].absorb(s, &self.config)?;
        }
        Ok(f)
    }

    /// Partition-wise union with a filter over the same keys, sizes and partitioning (e.g. another task's).
    pub fn union(&mut self, other: &DynamicFilter) -> Result<()> {
        if self.key_types != other.key_types
            || self.config != other.config
            || self.partitions.len() != other.partitions.len()
        {
            return internal_err!(
                "dynamic filter: cannot unite filters over different keys, sizes or partitionings \
                 ({:?}/{:?}/{} and {:?}/{:?}/{})",
                self.key_types,
                self.config,
                self.partitions.len(),
                other.key_types,
                other.config,
                other.partitions.len()
            );
        }
        for (mine, theirs) in self.partitions.iter_mut().zip(&other.partitions) {
            mine.absorb(theirs, &self.config)?;
        }
        Ok(())
    }

    /// Adds build keys whose rows go to the given partitions (`partitions[i]`: row `i`'s), as a shuffle writer
    /// routes them: rows grouped by partition (one `take`), then each group added as [`Self::update`] adds it.
    pub fn update_routed(&mut self, partitions: &[u32], keys: &[ArrayRef]) -> Result<()> {
        let rows = self.check_keys(keys)?;
        if partitions.len() != rows {
            return internal_err!("dynamic filter: {} partitions for {rows} rows", partitions.len());
        }
        let n = self.partitions.len();
        if n == 1 {
            return self.update(0, keys);
        }
        let mut starts = vec![0usize; n + 1];
        for &p in partitions {
            if p as usize >= n {
                return internal_err!("dynamic filter: partition {p} of {n}");
            }
            starts[p as usize + 1] += 1;
        }
        for p in 0..n {
            starts[p + 1] += starts[p];
        }
        let mut next = starts.clone();
        let mut order = vec![0u32; rows];
        for (row, &p) in partitions.iter().enumerate() {
            order[next[p as usize]] = row as u32;
            next[p as usize] += 1;
        }
        let order = UInt32Array::from(order);
        let sorted = keys.iter().map(|k| take(k.as_ref(), &order, None)).collect::<Result<Vec<_>, _>>()?;
        for p in 0..n {
            let (start, len) = (starts[p], starts[p + 1] - starts[p]);
            if len > 0 {
                let slice: Vec<ArrayRef> = sorted.iter().map(|k| k.slice(start, len)).collect();
                self.update(p, &slice)?;
            }
        }
        Ok(())
    }

    /// Whether each row of `keys` may have a match in the partition it is routed to (`partitions[i]`): no null
    /// key and among that partition's keys (exactly, or by its bloom filter). A partition's bounds are not
    /// checked per row (its exact set implies them); never null.
    pub fn might_contain_routed(&self, partitions: &[u32], keys: &[ArrayRef]) -> Result<BooleanArray> {
        let rows = self.check_keys(keys)?;
        if partitions.len() != rows {
            return internal_err!("dynamic filter: {} partitions for {rows} rows", partitions.len());
        }
        let nulls = null_free(keys, rows);
        let encoded = self.converter.convert_columns(keys)?;
        let mut out = BooleanBufferBuilder::new(rows);
        for (i, row) in encoded.iter().enumerate() {
            let Some(summary) = self.partitions.get(partitions[i] as usize) else {
                return internal_err!("dynamic filter: partition {} of {}", partitions[i], self.partitions.len());
            };
            let valid = nulls.as_ref().is_none_or(|m| m.value(i));
            out.append(valid && summary.rows > 0 && summary.contains(row.as_ref()));
        }
        Ok(BooleanArray::new(out.finish(), None))
    }

    /// The distinct keys of a one-partition filter, one array per key column, while it holds them exactly and
    /// there are at most `limit` of them (e.g. for an IN list a scan prunes row groups with).
    pub fn exact_values(&self, limit: usize) -> Result<Option<Vec<ArrayRef>>> {
        let [summary] = self.partitions.as_slice() else {
            return internal_err!("dynamic filter: exact values of {} partitions", self.partitions.len());
        };
        if summary.bloom.is_some() || summary.set.len() > limit {
            return Ok(None);
        }
        let parser = self.converter.parser();
        let rows = summary.set.iter().map(|k| parser.parse(k));
        Ok(Some(self.converter.convert_rows(rows)?))
    }

    /// Whether each row of `keys` may have a match in a one-partition filter (see [`Self::might_contain_in`]).
    pub fn might_contain(&self, keys: &[ArrayRef]) -> Result<BooleanArray> {
        if self.partitions.len() != 1 {
            return internal_err!(
                "dynamic filter: might_contain over {} partitions needs a partition",
                self.partitions.len()
            );
        }
        self.might_contain_in(0, keys)
    }

    /// Whether each row of `keys` may have a match in `partition`: false for certain when it has a null key, lies
    /// outside a column's bounds, or is not among the keys. Never null.
    pub fn might_contain_in(&self, partition: usize, keys: &[ArrayRef]) -> Result<BooleanArray> {
        let rows = self.check_keys(keys)?;
        let Some(summary) = self.partitions.get(partition) else {
            return internal_err!("dynamic filter: partition {partition} of {}", self.partitions.len());
        };
        if summary.rows == 0 || rows == 0 {
            return Ok(BooleanArray::from(vec![false; rows]));
        }
        // Null-free, within bounds: a bitmap without nulls.
        let mut pass = match null_free(keys, rows) {
            Some(mask) => mask,
            None => BooleanArray::from(vec![true; rows]),
        };
        for (k, b) in keys.iter().zip(&summary.bounds) {
            if let Some((lo, hi)) = b {
                let within = and(&gt_eq(k, &lo.to_scalar()?)?, &lt_eq(k, &hi.to_scalar()?)?)?;
                pass = and_not_null(&pass, &within)?;
            }
        }
        if pass.true_count() == 0 {
            return Ok(pass);
        }
        let encoded = self.converter.convert_columns(keys)?;
        let mut out = BooleanBufferBuilder::new(rows);
        for (i, row) in encoded.iter().enumerate() {
            out.append(pass.value(i) && summary.contains(row.as_ref()));
        }
        Ok(BooleanArray::new(out.finish(), None))
    }

    /// The filter as plain data (for the proto form).
    pub fn to_parts(&self) -> Result<DynamicFilterParts> {
        let partitions = self
            .partitions
            .iter()
            .map(|s| {
                Ok(KeySummaryParts {
                    rows: s.rows,
                    bounds: s.bounds.clone(),
                    set: s.set.iter().map(|k| k.to_vec()).collect(),
                    bloom: s.bloom.as_ref().map(bloom_bytes).transpose()?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DynamicFilterParts { key_types: self.key_types.clone(), config: self.config, partitions })
    }

    /// A filter from plain data (checked: column counts, bloom sizes).
    pub fn from_parts(parts: DynamicFilterParts) -> Result<Self> {
        let mut f = Self::try_new(parts.key_types, parts.partitions.len(), parts.config)?;
        let expected_blocks = Sbbf::new_with_num_of_bytes(parts.config.bloom_bytes).num_blocks();
        for (s, p) in f.partitions.iter_mut().zip(parts.partitions) {
            if p.bounds.len() != f.key_types.len() {
                return internal_err!("dynamic filter: {} bounds for {} keys", p.bounds.len(), f.key_types.len());
            }
            s.rows = p.rows;
            s.bounds = p.bounds;
            s.set = p.set.into_iter().map(Vec::into_boxed_slice).collect();
            if let Some(bits) = p.bloom {
                if bits.len() != expected_blocks * 32 {
                    return internal_err!(
                        "dynamic filter: a bloom filter of {} bytes, expected {}",
                        bits.len(),
                        expected_blocks * 32
                    );
                }
                s.bloom = Some(Sbbf::new(&bits));
            }
        }
        Ok(f)
    }

    /// The key fields (names `k0`, `k1`, …) of the proto form's bounds.
    pub fn key_fields(&self) -> Vec<Field> {
        self.key_types.iter().enumerate().map(|(i, t)| Field::new(format!("k{i}"), t.clone(), true)).collect()
    }
}

/// Distinct keys up to which a scan also gets them as an IN list (beyond, its bounds only: a long IN list costs
/// more per row than it saves).
pub const SCAN_PRUNING_VALUES: usize = 16;

/// What a scan can prune with from a one-partition filter: whether it is empty (no build row, nothing can match),
/// the bounds of each key column, and the keys of a one-column filter when there are at most
/// [`SCAN_PRUNING_VALUES`].
#[derive(Debug, Clone, PartialEq)]
pub struct KeyPruning {
    pub empty: bool,
    pub bounds: Vec<Option<(ScalarValue, ScalarValue)>>,
    pub values: Option<Vec<ScalarValue>>,
}

impl KeyPruning {
    /// Of a one-partition filter (a join's own, or a driver's union made [`DynamicFilter::global`]).
    pub fn of(filter: &DynamicFilter) -> Result<Self> {
        let [summary] = filter.partitions.as_slice() else {
            return internal_err!("dynamic filter: scan pruning of {} partitions", filter.partitions.len());
        };
        let values = match (filter.key_types().len(), filter.exact_values(SCAN_PRUNING_VALUES)?) {
            // (No key at all is `empty`.)
            (1, Some(v)) if !v[0].is_empty() => {
                Some((0..v[0].len()).map(|i| ScalarValue::try_from_array(&v[0], i)).collect::<Result<_>>()?)
            }
            _ => None,
        };
        Ok(Self { empty: summary.rows == 0, bounds: summary.bounds.clone(), values })
    }

    /// Conjuncts a scan's reader prunes with, for the key columns `column_of` maps to scan columns: `>= min` and
    /// `<= max`, the IN list, and when nothing can match `IS NULL AND IS NOT NULL` (every row group skipped).
    pub fn scan_filters(&self, column_of: impl Fn(usize) -> Option<usize>) -> Vec<ScanFilter> {
        let filter = |column, op, values| ScanFilter { column, op, values };
        if self.empty {
            // Any one mapped key column proves it: its rows are all null or not null.
            return (0..self.bounds.len().max(1))
                .find_map(&column_of)
                .map(|c| vec![filter(c, FilterOp::IsNull, vec![]), filter(c, FilterOp::IsNotNull, vec![])])
                .unwrap_or_default();
        }
        let mut out = vec![];
        for (key, b) in self.bounds.iter().enumerate() {
            if let (Some((lo, hi)), Some(c)) = (b, column_of(key)) {
                out.push(filter(c, FilterOp::Ge, vec![lo.clone()]));
                out.push(filter(c, FilterOp::Le, vec![hi.clone()]));
            }
        }
        if let (Some(values), Some(c)) = (&self.values, column_of(0)) {
            out.push(filter(c, FilterOp::In, values.clone()));
        }
        out
    }
}

/// The rows whose keys are all non-null, or `None` when every row is.
fn null_free(keys: &[ArrayRef], rows: usize) -> Option<BooleanArray> {
    let nulls =
        keys.iter().fold(None::<NullBuffer>, |acc, k| NullBuffer::union(acc.as_ref(), k.logical_nulls().as_ref()));
    nulls.filter(|n| n.null_count() > 0).map(|n| {
        debug_assert_eq!(n.len(), rows);
        BooleanArray::new(n.into_inner(), None)
    })
}

/// `a AND b` with a null in `b` taken as false.
fn and_not_null(a: &BooleanArray, b: &BooleanArray) -> Result<BooleanArray> {
    let b = match b.nulls() {
        Some(n) => BooleanArray::new(b.values() & n.inner(), None),
        None => b.clone(),
    };
    Ok(and(a, &b)?)
}

/// Shared handle to a filter a join built (read by its probe side).
pub type SharedDynamicFilter = Arc<DynamicFilter>;
