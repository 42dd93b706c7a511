//! Spark's `Murmur3Hash(children, seed = 42)` (the `hash()` function, and `HashPartitioning`'s routing), bit for
//! bit, vectorized over Arrow arrays.
//!
//! Spark starts every row at the seed and folds the key columns in order: a non-null value replaces the row's
//! hash with the value's hash seeded by the current one; a null leaves it unchanged. The value hashes are
//! `org.apache.spark.unsafe.hash.Murmur3_x86_32`'s `hashInt` / `hashLong` / `hashUnsafeBytes`, chosen per type as
//! catalyst's `HashExpression` does. `hashUnsafeBytes` is *not* standard Murmur3: the tail bytes past the last
//! full 4-byte word are mixed one at a time (each a signed byte widened to int), which is why the routing of
//! strings cannot reuse a standard Murmur3 implementation.
use arrow::array::{
    Array, ArrayRef, AsArray, BinaryViewArray, BooleanArray, GenericByteArray, PrimitiveArray, StringViewArray,
};
use arrow::datatypes::{
    ArrowPrimitiveType, ByteArrayType, DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type,
    Int32Type, Int64Type, Int8Type, TimeUnit, TimestampMicrosecondType,
};
use datafusion_common::Result;

use crate::error::plan_error;

/// The seed of Spark's `Murmur3Hash` (and so of `HashPartitioning`).
pub const SPARK_HASH_SEED: i32 = 42;

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

#[inline(always)]
fn mix_k1(k1: u32) -> u32 {
    k1.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

#[inline(always)]
fn mix_h1(h1: u32, k1: u32) -> u32 {
    (h1 ^ k1).rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64)
}

#[inline(always)]
fn fmix(mut h1: u32, length: u32) -> u32 {
    h1 ^= length;
    h1 ^= h1 >> 16;
    h1 = h1.wrapping_mul(0x85eb_ca6b);
    h1 ^= h1 >> 13;
    h1 = h1.wrapping_mul(0xc2b2_ae35);
    h1 ^ (h1 >> 16)
}

/// `Murmur3_x86_32.hashInt(input, seed)`.
#[inline(always)]
pub fn hash_int(input: i32, seed: i32) -> i32 {
    fmix(mix_h1(seed as u32, mix_k1(input as u32)), 4) as i32
}

/// `Murmur3_x86_32.hashLong(input, seed)`: the low word, then the high word.
#[inline(always)]
pub fn hash_long(input: i64, seed: i32) -> i32 {
    let low = input as u32;
    let high = ((input as u64) >> 32) as u32;
    let h1 = mix_h1(seed as u32, mix_k1(low));
    fmix(mix_h1(h1, mix_k1(high)), 8) as i32
}

/// `Murmur3_x86_32.hashUnsafeBytes(bytes, seed)`: little-endian 4-byte words, then each remaining byte on its own
/// as a signed byte widened to int (Spark's deviation from standard Murmur3), then `fmix` with the length.
#[inline]
pub fn hash_bytes(bytes: &[u8], seed: i32) -> i32 {
    let mut h1 = seed as u32;
    let mut words = bytes.chunks_exact(4);
    for w in &mut words {
        h1 = mix_h1(h1, mix_k1(u32::from_le_bytes([w[0], w[1], w[2], w[3]])));
    }
    for &b in words.remainder() {
        h1 = mix_h1(h1, mix_k1(b as i8 as i32 as u32));
    }
    fmix(h1, bytes.len() as u32) as i32
}

/// A float as `HashExpression` hashes it: ±0.0 as the int 0, NaN by `floatToIntBits`' canonical NaN.
#[inline(always)]
pub fn hash_f32(v: f32, seed: i32) -> i32 {
    let bits = if v == 0.0 {
        0
    } else if v.is_nan() {
        0x7fc0_0000
    } else {
        v.to_bits() as i32
    };
    hash_int(bits, seed)
}

/// A double as `HashExpression` hashes it: ±0.0 as the long 0, NaN by `doubleToLongBits`' canonical NaN.
#[inline(always)]
pub fn hash_f64(v: f64, seed: i32) -> i32 {
    let bits = if v == 0.0 {
        0
    } else if v.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        v.to_bits() as i64
    };
    hash_long(bits, seed)
}

/// A decimal as `HashExpression` hashes it: precision <= 18 (`Decimal.MAX_LONG_DIGITS`) by its unscaled long,
/// wider by the bytes of `BigInteger.toByteArray()` of its unscaled value (minimal big-endian two's complement).
#[inline]
pub fn hash_decimal(unscaled: i128, precision: u8, seed: i32) -> i32 {
    if precision <= 18 {
        hash_long(unscaled as i64, seed)
    } else {
        let be = unscaled.to_be_bytes();
        hash_bytes(&be[16 - java_byte_len(unscaled)..], seed)
    }
}

/// `BigInteger.toByteArray().length`: the bits of the value without its sign, plus one sign bit, in bytes.
fn java_byte_len(v: i128) -> usize {
    let magnitude_bits = 128 - if v < 0 { (!v).leading_zeros() } else { v.leading_zeros() } as usize;
    magnitude_bits / 8 + 1
}

/// Spark's `pmod(hash, n)`: the partition of a hash among `n` (> 0) partitions, in `0..n`.
#[inline(always)]
pub fn pmod(hash: i32, n: u32) -> u32 {
    // `rem_euclid` of the i64 keeps n up to u32::MAX exact; for n <= i32::MAX it is Spark's ((h % n) + n) % n.
    (hash as i64).rem_euclid(n as i64) as u32
}

/// Whether [`update_hashes`] can hash a column of this type (a plan-time check, so an unsupported key fails
/// when the plan is built rather than on its first batch).
pub fn check_supported(dt: &DataType) -> Result<()> {
    use DataType::*;
    match dt {
        Null | Boolean | Int8 | Int16 | Int32 | Int64 | Date32 | Float32 | Float64 | Decimal128(..) | Utf8
        | LargeUtf8 | Utf8View | Binary | LargeBinary | BinaryView => Ok(()),
        Timestamp(TimeUnit::Microsecond, _) => Ok(()),
        other => Err(plan_error(format!("Spark's murmur3 hash of {other} is not supported"))),
    }
}

/// Folds one key column into the rows' running hashes (`hashes.len() == array.len()`): a non-null value replaces
/// its row's hash with the value's hash seeded by it, a null leaves it unchanged.
pub fn update_hashes(array: &dyn Array, hashes: &mut [i32]) -> Result<()> {
    if array.len() != hashes.len() {
        return Err(plan_error(format!("hash of {} values into {} rows", array.len(), hashes.len())));
    }
    match array.data_type() {
        DataType::Null => {}
        DataType::Boolean => {
            let a: &BooleanArray = array.as_boolean();
            fold(a.nulls(), hashes, |i, h| hash_int(a.value(i) as i32, h));
        }
        DataType::Int8 => fold_primitive::<Int8Type>(array, hashes, |v, h| hash_int(v as i32, h)),
        DataType::Int16 => fold_primitive::<Int16Type>(array, hashes, |v, h| hash_int(v as i32, h)),
        DataType::Int32 => fold_primitive::<Int32Type>(array, hashes, hash_int),
        DataType::Date32 => fold_primitive::<Date32Type>(array, hashes, hash_int),
        DataType::Int64 => fold_primitive::<Int64Type>(array, hashes, hash_long),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            fold_primitive::<TimestampMicrosecondType>(array, hashes, hash_long)
        }
        DataType::Float32 => fold_primitive::<Float32Type>(array, hashes, hash_f32),
        DataType::Float64 => fold_primitive::<Float64Type>(array, hashes, hash_f64),
        DataType::Decimal128(p, _) => {
            let p = *p;
            fold_primitive::<Decimal128Type>(array, hashes, |v, h| hash_decimal(v, p, h))
        }
        DataType::Utf8 => fold_bytes(array.as_string::<i32>(), hashes),
        DataType::LargeUtf8 => fold_bytes(array.as_string::<i64>(), hashes),
        DataType::Binary => fold_bytes(array.as_binary::<i32>(), hashes),
        DataType::LargeBinary => fold_bytes(array.as_binary::<i64>(), hashes),
        DataType::Utf8View => {
            let a: &StringViewArray = array.as_string_view();
            fold(a.nulls(), hashes, |i, h| hash_bytes(a.value(i).as_bytes(), h));
        }
        DataType::BinaryView => {
            let a: &BinaryViewArray = array.as_binary_view();
            fold(a.nulls(), hashes, |i, h| hash_bytes(a.value(i), h));
        }
        other => return Err(plan_error(format!("Spark's murmur3 hash of {other} is not supported"))),
    }
    Ok(())
}

/// Spark's `Murmur3Hash(columns, 42)` of every row (all columns of the same length `num_rows`).
pub fn spark_hash(columns: &[ArrayRef], num_rows: usize) -> Result<Vec<i32>> {
    let mut hashes = vec![SPARK_HASH_SEED; num_rows];
    for c in columns {
        update_hashes(c.as_ref(), &mut hashes)?;
    }
    Ok(hashes)
}

#[inline]
fn fold(nulls: Option<&arrow::buffer::NullBuffer>, hashes: &mut [i32], f: impl Fn(usize, i32) -> i32) {
    match nulls {
        Some(n) if n.null_count() > 0 => {
            for (i, h) in hashes.iter_mut().enumerate() {
                if n.is_valid(i) {
                    *h = f(i, *h);
                }
            }
        }
        _ => {
            for (i, h) in hashes.iter_mut().enumerate() {
                *h = f(i, *h);
            }
        }
    }
}

fn fold_primitive<T: ArrowPrimitiveType>(array: &dyn Array, hashes: &mut [i32], f: impl Fn(T::Native, i32) -> i32) {
    let a: &PrimitiveArray<T> = array.as_primitive();
    let values = a.values();
    match a.nulls() {
        Some(n) if n.null_count() > 0 => {
            for (i, h) in hashes.iter_mut().enumerate() {
                if n.is_valid(i) {
                    *h = f(values[i], *h);
                }
            }
        }
        _ => {
            for (v, h) in values.iter().zip(hashes.iter_mut()) {
                *h = f(*v, *h);
            }
        }
    }
}

fn fold_bytes<T: ByteArrayType>(a: &GenericByteArray<T>, hashes: &mut [i32])
where
    T::Native: AsRef<[u8]>,
{
    fold(a.nulls(), hashes, |i, h| hash_bytes(a.value(i).as_ref(), h));
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        BinaryArray, Date32Array, Decimal128Array, Float32Array, Float64Array, Int16Array, Int32Array, Int64Array,
        Int8Array, LargeStringArray, NullArray, StringArray, TimestampMicrosecondArray, UInt32Array,
    };

    use super::*;

    fn h1(a: ArrayRef) -> Vec<i32> {
        let n = a.len();
        spark_hash(&[a], n).unwrap()
    }

    // Every expected value below is Spark 4.1.3's, from PySpark (local[1], spark.sql.session.timeZone=UTC):
    //   spark.sql("select hash(true), hash(false), hash(cast(1 as tinyint)), ...").collect()
    // with the expression written next to each value.

    #[test]
    fn scalar_hashes_match_spark() {
        // hash(1), hash(0), hash(-1), hash(2147483647), hash(-2147483648), hash(42)
        assert_eq!(hash_int(1, 42), -559580957);
        assert_eq!(hash_int(0, 42), 933211791);
        assert_eq!(hash_int(-1, 42), -1604776387);
        assert_eq!(hash_int(i32::MAX, 42), 133916647);
        assert_eq!(hash_int(i32::MIN, 42), 723455942);
        assert_eq!(hash_int(42, 42), 29417773);
        // hash(cast(0 as bigint)), hash(cast(1 as bigint)), hash(cast(-1 as bigint)), hash(9223372036854775807),
        // hash(-9223372036854775808), hash(cast(5 as bigint)), hash(1234567890123)
        assert_eq!(hash_long(0, 42), -1670924195);
        assert_eq!(hash_long(1, 42), -1712319331);
        assert_eq!(hash_long(-1, 42), -939490007);
        assert_eq!(hash_long(i64::MAX, 42), -1604625029);
        assert_eq!(hash_long(i64::MIN, 42), -853646085);
        assert_eq!(hash_long(5, 42), 1607884268);
        assert_eq!(hash_long(1234567890123, 42), 1304145252);
        // pmod(hash(cast(5 as bigint)), 200) = 68, pmod(hash(-1), 7) = 3
        assert_eq!(pmod(hash_long(5, 42), 200), 68);
        assert_eq!(pmod(hash_int(-1, 42), 7), 3);
    }

    #[test]
    fn strings_of_every_tail_length_match_spark() {
        // hash(''), hash('a'), ..., hash('abcdefghi'): lengths 0..=9, every tail length 0..=3 twice.
        let expected = [
            142593372,
            1485273170,
            -97053317,
            1322437556,
            -396302900,
            814637928,
            724255765,
            2132013596,
            -804741815,
            -1830117711,
        ];
        let abc = "abcdefghi";
        for (len, e) in expected.iter().enumerate() {
            assert_eq!(hash_bytes(&abc.as_bytes()[..len], 42), *e, "length {len}");
        }
        let strings: StringArray = (0..=9).map(|l| Some(&abc[..l])).collect();
        assert_eq!(h1(Arc::new(strings)), expected);
        let large: LargeStringArray = (0..=9).map(|l| Some(&abc[..l])).collect();
        assert_eq!(h1(Arc::new(large)), expected);
        let view: StringViewArray = (0..=9).map(|l| Some(&abc[..l])).collect();
        assert_eq!(h1(Arc::new(view)), expected);
        // Bytes >= 0x80 in the tail are negative Java bytes:
        // hash('é') = 2119106806, hash('日本語') = -1143049834, hash('ÿÿÿ') = 883061003,
        // hash('hello wörld!') = 110221941
        let s: StringArray = vec![Some("é"), Some("日本語"), Some("ÿÿÿ"), Some("hello wörld!")].into_iter().collect();
        assert_eq!(h1(Arc::new(s)), [2119106806, -1143049834, 883061003, 110221941]);
        // hash(X''), hash(X'FF'), hash(X'80FF01'), hash(X'0102030405'), hash(X'FFFFFFFFFE')
        let b = BinaryArray::from_vec(vec![
            &[][..],
            &[0xFF],
            &[0x80, 0xFF, 0x01],
            &[1, 2, 3, 4, 5],
            &[0xFF, 0xFF, 0xFF, 0xFF, 0xFE],
        ]);
        assert_eq!(h1(Arc::new(b)), [142593372, 1398487324, -1935714940, -2064006189, 1013825933]);
        let bv = BinaryViewArray::from_iter_values([&[0x80u8, 0xFF, 0x01][..], &[1, 2, 3, 4, 5]]);
        assert_eq!(h1(Arc::new(bv)), [-1935714940, -2064006189]);
    }

    #[test]
    fn integral_dates_timestamps_match_spark() {
        // hash(true), hash(false)
        assert_eq!(h1(Arc::new(BooleanArray::from(vec![true, false]))), [-559580957, 933211791]);
        // hash(cast(1 as tinyint)), hash(cast(-1 as tinyint)), hash(cast(-128 as tinyint))
        assert_eq!(h1(Arc::new(Int8Array::from(vec![1, -1, -128]))), [-559580957, -1604776387, 1110053733]);
        // hash(cast(1 as smallint)), hash(cast(-32768 as smallint))
        assert_eq!(h1(Arc::new(Int16Array::from(vec![1, -32768]))), [-559580957, -1871935946]);
        assert_eq!(h1(Arc::new(Int32Array::from(vec![1, -1, i32::MIN]))), [-559580957, -1604776387, 723455942]);
        assert_eq!(h1(Arc::new(Int64Array::from(vec![1, -1, i64::MIN]))), [-1712319331, -939490007, -853646085]);
        // hash(date'2024-01-01'), hash(date'1960-06-15'), hash(date'1970-01-01')
        assert_eq!(h1(Arc::new(Date32Array::from(vec![19723, -3487, 0]))), [-456589419, -803051772, 933211791]);
        // hash(timestamp'2024-01-01 00:00:00'), hash(timestamp'1960-06-15 12:34:56.789012') (UTC), and
        // hash(timestamp_ntz'2024-01-01 00:00:00')
        let ts = TimestampMicrosecondArray::from(vec![1_704_067_200_000_000, -301_231_503_210_988]);
        assert_eq!(h1(Arc::new(ts.clone().with_timezone("UTC"))), [1545358984, 1488753646]);
        assert_eq!(h1(Arc::new(ts)), [1545358984, 1488753646]);
    }

    #[test]
    #[allow(clippy::approx_constant)] // 3.14159 is the literal of the Spark query, not an approximation of pi
    fn floats_match_spark() {
        // hash(cast(0.0 as float)), hash(cast(-0.0 as float)), hash(cast('NaN' as float)), hash(cast(1.5 as float)),
        // hash(cast(-1.5 as float)), hash(cast('Infinity' as float)), hash(cast(3.14159 as float))
        let f = Float32Array::from(vec![0.0, -0.0, f32::NAN, 1.5, -1.5, f32::INFINITY, 3.14159]);
        assert_eq!(h1(Arc::new(f)), [933211791, 933211791, -349261430, -221251528, 1765572753, 2026854605, 525777376]);
        // A NaN with another payload hashes as the canonical NaN.
        assert_eq!(hash_f32(f32::from_bits(0x7fc0_0001), 42), -349261430);
        assert_eq!(hash_f32(f32::from_bits(0xffc0_0000), 42), -349261430);
        // hash(cast(0.0 as double)), hash(cast(-0.0 as double)), hash(cast('NaN' as double)),
        // hash(cast(1.5 as double)), hash(cast(-1.5 as double)), hash(cast('-Infinity' as double)),
        // hash(cast(3.14159 as double))
        let d = Float64Array::from(vec![0.0, -0.0, f64::NAN, 1.5, -1.5, f64::NEG_INFINITY, 3.14159]);
        assert_eq!(
            h1(Arc::new(d)),
            [-1670924195, -1670924195, -1281358385, 1290763749, 2099784398, 461104036, -954522396]
        );
        assert_eq!(hash_f64(f64::from_bits(0xfff8_0000_0000_0001), 42), -1281358385);
    }

    #[test]
    fn decimals_match_spark() {
        // hash(cast(123.45 as decimal(10,2))), hash(cast(-123.45 as decimal(10,2))), hash(cast(0 as decimal(10,2)))
        let d = Decimal128Array::from(vec![12345, -12345, 0]).with_precision_and_scale(10, 2).unwrap();
        assert_eq!(h1(Arc::new(d)), [1416086240, -1959512858, -1670924195]);
        // hash(cast(999999999999999999 as decimal(18,0))), hash(cast(-999999999999999999 as decimal(18,0)))
        let d = Decimal128Array::from(vec![999_999_999_999_999_999, -999_999_999_999_999_999])
            .with_precision_and_scale(18, 0)
            .unwrap();
        assert_eq!(h1(Arc::new(d)), [-1795328666, 1962370902]);
        // hash(cast(12345678901234567.89 as decimal(20,2))), hash(cast(-12345678901234567.89 as decimal(20,2)))
        let d = Decimal128Array::from(vec![1_234_567_890_123_456_789, -1_234_567_890_123_456_789])
            .with_precision_and_scale(20, 2)
            .unwrap();
        assert_eq!(h1(Arc::new(d)), [-285683440, -118347807]);
        // hash(cast(0 as decimal(38,0))), hash(cast(1 as decimal(38,10))), hash(cast(-1 as decimal(38,10)))
        assert_eq!(hash_decimal(0, 38, 42), -783713497);
        assert_eq!(hash_decimal(10_000_000_000, 38, 42), -913492360);
        assert_eq!(hash_decimal(-10_000_000_000, 38, 42), 1628110857);
        // hash(cast(127 as decimal(19,0))), hash(cast(128 ...)), hash(cast(-128 ...)), hash(cast(-129 ...)):
        // the sign byte boundaries of toByteArray.
        let d = Decimal128Array::from(vec![127, 128, -128, -129]).with_precision_and_scale(19, 0).unwrap();
        assert_eq!(h1(Arc::new(d)), [1185089389, -544401882, 775851899, -771458971]);
        // hash(cast('99999999999999999999999999999999999999' as decimal(38,0))) and its negation
        let max = 99_999_999_999_999_999_999_999_999_999_999_999_999i128;
        assert_eq!(hash_decimal(max, 38, 42), -817514053);
        assert_eq!(hash_decimal(-max, 38, 42), 1400911110);
    }

    #[test]
    fn java_byte_lengths() {
        for (v, len) in
            [(0i128, 1), (127, 1), (128, 2), (-128, 1), (-129, 2), (-1, 1), (i128::MAX, 16), (i128::MIN, 16)]
        {
            assert_eq!(java_byte_len(v), len, "{v}");
        }
    }

    #[test]
    fn nulls_and_several_columns_match_spark() {
        // hash(cast(null as int)) = 42, hash(cast(null as string)) = 42
        assert_eq!(h1(Arc::new(Int32Array::from(vec![None]))), [42]);
        assert_eq!(h1(Arc::new(StringArray::from(vec![None::<&str>]))), [42]);
        assert_eq!(h1(Arc::new(NullArray::new(2))), [42, 42]);
        let cols = |a: ArrayRef, b: ArrayRef| spark_hash(&[a, b], 3).unwrap();
        // hash(1, 'abc') = -1267584506, hash(cast(null as int), 'abc') = 1322437556 (= hash('abc')),
        // pmod(hash(1, 'abc'), 7) = 1
        let got = cols(
            Arc::new(Int32Array::from(vec![Some(1), None, Some(1)])),
            Arc::new(StringArray::from(vec![Some("abc"), Some("abc"), None])),
        );
        assert_eq!(got, [-1267584506, 1322437556, -559580957]);
        assert_eq!(pmod(got[0], 7), 1);
        // hash('abc', 1) = 945627151: the order of the keys matters.
        let got = cols(Arc::new(StringArray::from(vec!["abc"; 3])), Arc::new(Int32Array::from(vec![1; 3])));
        assert_eq!(got[0], 945627151);
        // hash(1, cast(null as string), cast(2 as bigint)) = 965479175
        let got = spark_hash(
            &[
                Arc::new(Int32Array::from(vec![1])),
                Arc::new(StringArray::from(vec![None::<&str>])),
                Arc::new(Int64Array::from(vec![2])),
            ],
            1,
        )
        .unwrap();
        assert_eq!(got, [965479175]);
        // hash(true, cast(1.5 as double), date'2024-01-01', cast(123.45 as decimal(10,2)), 'xyz') = -274453199
        let got = spark_hash(
            &[
                Arc::new(BooleanArray::from(vec![true])),
                Arc::new(Float64Array::from(vec![1.5])),
                Arc::new(Date32Array::from(vec![19723])),
                Arc::new(Decimal128Array::from(vec![12345]).with_precision_and_scale(10, 2).unwrap()),
                Arc::new(StringArray::from(vec!["xyz"])),
            ],
            1,
        )
        .unwrap();
        assert_eq!(got, [-274453199]);
        // pmod(hash('abc'), 200) = 156
        assert_eq!(pmod(1322437556, 200), 156);
    }

    #[test]
    fn unsupported_types_are_plan_errors() {
        let a: ArrayRef = Arc::new(UInt32Array::from(vec![1]));
        let err = spark_hash(&[a], 1).unwrap_err();
        assert!(err.to_string().contains("not supported"), "{err}");
        assert!(check_supported(&DataType::UInt32).is_err());
        assert!(check_supported(&DataType::Utf8View).is_ok());
    }
}
