//! Packing a row's sort keys and its position into one `u64` or `u128`, and the LSD radix sort over those values.
use arrow::array::{Array, ArrayRef, AsArray};
use arrow::buffer::{NullBuffer, ScalarBuffer};
use arrow::compute::SortOptions;
use arrow::datatypes::{ArrowNativeType, DataType, Decimal128Type, Float32Type, Float64Type};

use crate::expressions::normalize::norm64;

/// Whether a sort key of this type can be packed: its values map to integers whose numeric order is Spark's
/// order (booleans false < true, dates and timestamps as their counts, decimals of one scale as unscaled longs,
/// floats as their IEEE bits ordered, after Spark's normalization: -0.0 = 0.0, every NaN equal and largest).
pub fn packable(data_type: &DataType) -> bool {
    use DataType::*;
    match data_type {
        Boolean | Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | Date32 | Date64 | Timestamp(_, _) => true,
        Float32 | Float64 => true,
        Decimal128(precision, _) => *precision <= 18,
        _ => false,
    }
}

/// One batch's values of one sort key, widened to `i64`; null slots hold anything.
pub struct KeyValues {
    values: ScalarBuffer<i64>,
    nulls: Option<NullBuffer>,
    /// Whether `values` is a copy (else the key column's own buffer).
    copied: bool,
}

impl KeyValues {
    /// Bytes this holds beyond the batch itself.
    pub fn extra_bytes(&self) -> usize {
        if self.copied {
            self.values.len() * 8
        } else {
            0
        }
    }

    pub fn new(array: &ArrayRef) -> Self {
        fn widen<T: ArrowNativeType + Into<i64>>(array: &dyn Array) -> ScalarBuffer<i64> {
            let data = array.to_data();
            let values = ScalarBuffer::<T>::new(data.buffers()[0].clone(), data.offset(), data.len());
            values.iter().map(|&v| v.into()).collect()
        }
        use DataType::*;
        let nulls = array.nulls().filter(|n| n.null_count() > 0).cloned();
        let values = match array.data_type() {
            Boolean => array.as_boolean().values().iter().map(i64::from).collect(),
            Int8 => widen::<i8>(array),
            Int16 => widen::<i16>(array),
            Int32 | Date32 => widen::<i32>(array),
            UInt8 => widen::<u8>(array),
            UInt16 => widen::<u16>(array),
            UInt32 => widen::<u32>(array),
            Float64 => array.as_primitive::<Float64Type>().values().iter().map(|&v| ordered_f64(v)).collect(),
            Float32 => array.as_primitive::<Float32Type>().values().iter().map(|&v| ordered_f64(v as f64)).collect(),
            // Valid values of DECIMAL(p <= 18) fit a long; null slots may not, and are never read.
            Decimal128(_, _) => array.as_primitive::<Decimal128Type>().values().iter().map(|&v| v as i64).collect(),
            // 64-bit integers (longs, dates as ms, timestamps): the column's own buffer, not a copy.
            _ => {
                let data = array.to_data();
                let values = ScalarBuffer::new(data.buffers()[0].clone(), data.offset(), data.len());
                return Self { values, nulls, copied: false };
            }
        };
        Self { values, nulls, copied: true }
    }

    fn valid(&self) -> impl Iterator<Item = i64> + '_ {
        let all = self.nulls.is_none();
        self.values
            .iter()
            .enumerate()
            .filter(move |(i, _)| all || self.nulls.as_ref().unwrap().is_valid(*i))
            .map(|(_, &v)| v)
    }
}

/// A float as a long in Spark's order: -0.0 as 0.0, every NaN as the canonical NaN (above +Infinity), then the
/// IEEE bits with the magnitude bits of negatives flipped (`f64::total_cmp`'s key). Widening a float to a double
/// keeps its order.
fn ordered_f64(v: f64) -> i64 {
    let bits = norm64(v).to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
}

/// Where one key sits in the packed value and how its values become codes: `code = |value - base| + offset`
/// (`base` the smallest value ascending, the largest descending), nulls one code below or above every value.
#[derive(Debug, Clone, PartialEq)]
struct PackedKey {
    shift: u32,
    bits: u32,
    base: i64,
    descending: bool,
    value_offset: u128,
    null_code: u128,
}

impl PackedKey {
    #[inline]
    fn code(&self, v: i64) -> u128 {
        // The distance to `base` is at most 2^64 - 1, so the wrapping difference is exact.
        let d = if self.descending {
            (self.base as u64).wrapping_sub(v as u64)
        } else {
            (v as u64).wrapping_sub(self.base as u64)
        };
        d as u128 + self.value_offset
    }
}

fn bits_for(max_code: u128) -> u32 {
    128 - max_code.leading_zeros()
}

/// How the keys of one sort's whole input pack: from the most significant bits down, each key's code in as few
/// bits as its range of values (and a null code, when it has nulls) needs, then the row's position in the
/// input. Equal keys then order by input position, so the sort is stable.
#[derive(Debug)]
pub struct KeyLayout {
    keys: Vec<PackedKey>,
    /// Bits of the row's position: the radix sort starts above them.
    pub ref_bits: u32,
    /// Bits of all the keys' codes together.
    pub key_bits: u32,
}

impl KeyLayout {
    /// The layout for these keys (per batch, per sort key) and batch lengths; `None` when they do not fit in
    /// 128 bits, or the input has more than 2^32 rows.
    pub fn try_new(keys: &[Vec<KeyValues>], options: &[SortOptions], rows: &[usize]) -> Option<Self> {
        let total: usize = rows.iter().sum();
        if total > u32::MAX as usize {
            return None;
        }
        let ref_bits = bits_for(total.saturating_sub(1) as u128);
        let mut packed: Vec<PackedKey> = Vec::with_capacity(options.len());
        for (k, opts) in options.iter().enumerate() {
            let (mut min, mut max, mut any_valid, mut any_null) = (i64::MAX, i64::MIN, false, false);
            for batch in keys {
                let key = &batch[k];
                any_null |= key.nulls.is_some();
                for v in key.valid() {
                    min = min.min(v);
                    max = max.max(v);
                    any_valid = true;
                }
            }
            let range = if any_valid { (max as i128 - min as i128) as u128 } else { 0 };
            let nulls_low = any_null && opts.nulls_first;
            let (value_offset, null_code) = match (any_valid, any_null) {
                (false, _) => (0, 0),
                (true, false) => (0, 0),
                (true, true) if nulls_low => (1, 0),
                (true, true) => (0, range + 1),
            };
            let max_code = if any_valid { range + any_null as u128 } else { 0 };
            packed.push(PackedKey {
                shift: 0,
                bits: bits_for(max_code),
                base: if opts.descending { max } else { min },
                descending: opts.descending,
                value_offset,
                null_code,
            });
        }
        let key_bits: u32 = packed.iter().map(|k| k.bits).sum();
        if key_bits + ref_bits > 128 {
            return None;
        }
        let mut shift = ref_bits + key_bits;
        for key in &mut packed {
            shift -= key.bits;
            key.shift = shift;
        }
        Some(Self { keys: packed, ref_bits, key_bits })
    }

    /// Whether the packed values fit a `u64`.
    pub fn fits_u64(&self) -> bool {
        self.key_bits + self.ref_bits <= 64
    }

    /// One packed value per input row, in input order (`P` must hold `key_bits + ref_bits` bits).
    pub fn pack<P: Packed>(&self, keys: &[Vec<KeyValues>], rows: &[usize]) -> Vec<P> {
        let mut out: Vec<P> = Vec::with_capacity(rows.iter().sum());
        for (batch_keys, &n) in keys.iter().zip(rows) {
            let start = out.len();
            out.extend((start..start + n).map(|r| P::from_u128(r as u128)));
            let slots = &mut out[start..];
            for (key, values) in self.keys.iter().zip(batch_keys) {
                if key.bits == 0 {
                    continue;
                }
                match &values.nulls {
                    None => {
                        for (slot, &v) in slots.iter_mut().zip(values.values.iter()) {
                            *slot = slot.or(P::from_u128(key.code(v) << key.shift));
                        }
                    }
                    Some(nulls) => {
                        for (i, (slot, &v)) in slots.iter_mut().zip(values.values.iter()).enumerate() {
                            let code = if nulls.is_valid(i) { key.code(v) } else { key.null_code };
                            *slot = slot.or(P::from_u128(code << key.shift));
                        }
                    }
                }
            }
        }
        out
    }

    /// The input row (position over all batches) a packed value came from.
    #[inline]
    pub fn position<P: Packed>(&self, packed: P) -> u32 {
        packed.low_bits(self.ref_bits) as u32
    }
}

/// A packed key and position: `u64` when they fit (half the memory traffic), else `u128`.
pub trait Packed: Copy + Ord + Default + Send + 'static {
    fn from_u128(v: u128) -> Self;
    fn or(self, other: Self) -> Self;
    /// `BUCKETS - 1` bits of the value from bit `shift` up.
    fn digit(self, shift: u32) -> usize;
    fn low_bits(self, bits: u32) -> u64;
}

macro_rules! packed {
    ($t:ty) => {
        impl Packed for $t {
            #[inline]
            fn from_u128(v: u128) -> Self {
                v as $t
            }
            #[inline]
            fn or(self, other: Self) -> Self {
                self | other
            }
            // `shift` stays below the type's width: the radix passes cover only the packed bits.
            #[inline]
            fn digit(self, shift: u32) -> usize {
                (self >> shift) as usize & (BUCKETS - 1)
            }
            // A position has at most 32 bits.
            #[inline]
            fn low_bits(self, bits: u32) -> u64 {
                (self & ((1 << bits) - 1)) as u64
            }
        }
    };
}
packed!(u64);
packed!(u128);

const DIGIT_BITS: u32 = 11;
const BUCKETS: usize = 1 << DIGIT_BITS;
/// Below this many rows a comparison sort of the packed values is as fast as building histograms.
const SMALL: usize = 4096;

/// Sorts packed values by bits `lo .. lo + bits` (the keys), keeping input order among equal keys: a
/// least-significant-digit radix sort, 11 bits per pass, that skips passes in which every value has the same
/// digit. The values' bits above `lo + bits` must be zero.
pub fn radix_sort<P: Packed>(values: &mut Vec<P>, lo: u32, bits: u32) {
    let n = values.len();
    if bits == 0 || n < 2 {
        return;
    }
    if n < SMALL {
        // Whole values: the position bits below `lo` break ties in input order.
        values.sort_unstable();
        return;
    }
    let passes = bits.div_ceil(DIGIT_BITS) as usize;
    let digit = |v: P, pass: usize| v.digit(lo + pass as u32 * DIGIT_BITS);
    let mut counts = vec![0usize; passes * BUCKETS];
    for &v in values.iter() {
        for pass in 0..passes {
            counts[pass * BUCKETS + digit(v, pass)] += 1;
        }
    }
    let mut scratch = vec![P::default(); n];
    let mut in_scratch = false;
    for pass in 0..passes {
        let count = &counts[pass * BUCKETS..(pass + 1) * BUCKETS];
        if count.contains(&n) {
            continue;
        }
        let mut next = vec![0usize; BUCKETS];
        let mut sum = 0;
        for (slot, &c) in next.iter_mut().zip(count) {
            *slot = sum;
            sum += c;
        }
        let (src, dst) = if in_scratch { (&scratch[..], &mut values[..]) } else { (&values[..], &mut scratch[..]) };
        for &v in src {
            let d = digit(v, pass);
            dst[next[d]] = v;
            next[d] += 1;
        }
        in_scratch = !in_scratch;
    }
    if in_scratch {
        std::mem::swap(values, &mut scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{BooleanArray, Int32Array, Int64Array};
    use std::sync::Arc;

    fn opts(descending: bool, nulls_first: bool) -> SortOptions {
        SortOptions { descending, nulls_first }
    }

    #[test]
    fn codes_pack_in_as_few_bits_as_the_ranges_need() {
        let a: ArrayRef = Arc::new(Int64Array::from(vec![Some(1000), None, Some(1010)]));
        let b: ArrayRef = Arc::new(Int32Array::from(vec![-3, 4, 0]));
        let keys = vec![vec![KeyValues::new(&a), KeyValues::new(&b)]];
        let layout = KeyLayout::try_new(&keys, &[opts(false, true), opts(true, false)], &[3]).unwrap();
        // a: 10 values + a null code (4 bits); b: range 7 (3 bits); 2 bits of row position, no batch bits.
        assert_eq!((layout.key_bits, layout.ref_bits), (7, 2));
        let packed: Vec<u128> = layout.pack(&keys, &[3]);
        let key = |p: u128| p >> layout.ref_bits;
        // row 0: a = 1000 → code 1 (nulls first), b = -3 descending → 4 - (-3) = 7
        assert_eq!(key(packed[0]), (1 << 3) | 7);
        // row 1: a null → 0; b = 4 descending → 0
        assert_eq!(key(packed[1]), 0);
        assert_eq!(key(packed[2]), (11 << 3) | 4);
        assert_eq!(layout.position(packed[2]), 2);
        let narrow: Vec<u64> = layout.pack(&keys, &[3]);
        assert_eq!(narrow, packed.iter().map(|&p| p as u64).collect::<Vec<_>>());
    }

    #[test]
    fn keys_wider_than_128_bits_do_not_pack() {
        let a: ArrayRef = Arc::new(Int64Array::from(vec![i64::MIN, i64::MAX]));
        let keys = vec![vec![KeyValues::new(&a), KeyValues::new(&a)]];
        assert!(KeyLayout::try_new(&keys, &[opts(false, true), opts(false, true)], &[2]).is_none());
        // One full-range key with a null code (65 bits) still fits.
        let n: ArrayRef = Arc::new(Int64Array::from(vec![Some(i64::MIN), None, Some(i64::MAX)]));
        let keys = vec![vec![KeyValues::new(&n)]];
        let layout = KeyLayout::try_new(&keys, &[opts(false, false)], &[3]).unwrap();
        assert_eq!(layout.key_bits, 65);
        assert!(!layout.fits_u64());
        let packed: Vec<u128> = layout.pack(&keys, &[3]);
        assert!(packed[0] < packed[2] && packed[2] < packed[1], "MIN < MAX < null (nulls last)");
    }

    #[test]
    fn radix_sort_is_stable_and_agrees_with_a_comparison_sort() {
        // Pseudo-random keys in 0..5000 over 30k rows (many ties), positions in the low 15 bits.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut values: Vec<u128> = (0..30_000u128)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (((x % 5000) as u128) << 15) | i
            })
            .collect();
        let mut expected = values.clone();
        expected.sort_unstable();
        let mut narrow: Vec<u64> = values.iter().map(|&v| v as u64).collect();
        radix_sort(&mut values, 15, 13);
        assert_eq!(values, expected);
        radix_sort(&mut narrow, 15, 13);
        assert_eq!(narrow, expected.iter().map(|&v| v as u64).collect::<Vec<_>>());
    }

    #[test]
    fn floats_order_as_spark_orders_them() {
        let ordered = [f64::NEG_INFINITY, -1.5, -f64::MIN_POSITIVE, 0.0, 1e-300, 2.0, f64::INFINITY, f64::NAN];
        for w in ordered.windows(2) {
            assert!(ordered_f64(w[0]) < ordered_f64(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(ordered_f64(-0.0), ordered_f64(0.0));
        assert_eq!(ordered_f64(-f64::NAN), ordered_f64(f64::NAN));
        assert_eq!(ordered_f64(f64::from_bits(0x7ff0_0000_0000_0001)), ordered_f64(f64::NAN));
        assert!(ordered_f64(f32::MAX as f64) < ordered_f64(f32::INFINITY as f64));
    }

    #[test]
    fn booleans_and_constant_keys_take_no_or_one_bit() {
        let t: ArrayRef = Arc::new(BooleanArray::from(vec![true, false, true]));
        let c: ArrayRef = Arc::new(Int32Array::from(vec![7, 7, 7]));
        let keys = vec![vec![KeyValues::new(&c), KeyValues::new(&t)]];
        let layout = KeyLayout::try_new(&keys, &[opts(false, true), opts(false, true)], &[3]).unwrap();
        assert_eq!(layout.key_bits, 1);
    }
}
