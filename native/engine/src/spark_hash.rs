//! Spark's `Murmur3Hash(children, seed = 42)` (the `hash()` function, and `HashPartitioning`'s routing) and
//! `XxHash64(children, seed = 42)` (the `xxhash64()` function), bit for bit, vectorized over Arrow arrays.
//!
//! Spark starts every row at the seed and folds the key columns in order: a non-null value replaces the row's
//! hash with the value's hash seeded by the current one; a null leaves it unchanged. The value hashes are
//! `org.apache.spark.unsafe.hash.Murmur3_x86_32`'s `hashInt` / `hashLong` / `hashUnsafeBytes`, chosen per type as
//! catalyst's `HashExpression` does. `hashUnsafeBytes` is *not* standard Murmur3: the tail bytes past the last
//! full 4-byte word are mixed one at a time (each a signed byte widened to int), which is why the routing of
//! strings cannot reuse a standard Murmur3 implementation. `XxHash64` folds the same way over the same per-type
//! choices with `XXH64`'s `hashInt` / `hashLong` / `hashUnsafeBytes` (64-bit hashes; standard XXH64 on bytes).
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

/// A float's bits as `HashExpression` hashes them: ±0.0 as the int 0, NaN as `floatToIntBits`' canonical NaN.
#[inline(always)]
fn float_bits(v: f32) -> i32 {
    if v == 0.0 {
        0
    } else if v.is_nan() {
        0x7fc0_0000
    } else {
        v.to_bits() as i32
    }
}

/// A double's bits as `HashExpression` hashes them: ±0.0 as the long 0, NaN as `doubleToLongBits`' canonical NaN.
#[inline(always)]
fn double_bits(v: f64) -> i64 {
    if v == 0.0 {
        0
    } else if v.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        v.to_bits() as i64
    }
}

/// A float as `HashExpression` hashes it (Murmur3).
#[inline(always)]
pub fn hash_f32(v: f32, seed: i32) -> i32 {
    hash_int(float_bits(v), seed)
}

/// A double as `HashExpression` hashes it (Murmur3).
#[inline(always)]
pub fn hash_f64(v: f64, seed: i32) -> i32 {
    hash_long(double_bits(v), seed)
}

/// A decimal as `HashExpression` hashes it (Murmur3): see [`SparkHasher::decimal`].
#[inline]
pub fn hash_decimal(unscaled: i128, precision: u8, seed: i32) -> i32 {
    Murmur3::decimal(unscaled, precision, seed)
}

/// `BigInteger.toByteArray().length`: the bits of the value without its sign, plus one sign bit, in bytes.
fn java_byte_len(v: i128) -> usize {
    let magnitude_bits = 128 - if v < 0 { (!v).leading_zeros() } else { v.leading_zeros() } as usize;
    magnitude_bits / 8 + 1
}

const P1: u64 = 0x9E37_79B1_85EB_CA87;
const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P3: u64 = 0x1656_67B1_9E37_79F9;
const P4: u64 = 0x85EB_CA77_C2B2_AE63;
const P5: u64 = 0x27D4_EB2F_1656_67C5;

#[inline(always)]
fn xxh_round(acc: u64, input: u64) -> u64 {
    acc.wrapping_add(input.wrapping_mul(P2)).rotate_left(31).wrapping_mul(P1)
}

/// One of the four accumulators merged into the hash (inputs of 32 bytes and more).
#[inline(always)]
fn xxh_merge(hash: u64, acc: u64) -> u64 {
    (hash ^ xxh_round(0, acc)).wrapping_mul(P1).wrapping_add(P4)
}

/// One 8-byte word folded into the hash (`hashLong`, and the words past the 32-byte stripes).
#[inline(always)]
fn xxh_word(hash: u64, word: u64) -> u64 {
    (hash ^ xxh_round(0, word)).rotate_left(27).wrapping_mul(P1).wrapping_add(P4)
}

#[inline(always)]
fn xxh_fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^ (h >> 32)
}

/// Spark's `XXH64.hashInt(input, seed)`.
#[inline(always)]
pub fn xxhash64_int(input: i32, seed: i64) -> i64 {
    let h = (seed as u64).wrapping_add(P5).wrapping_add(4) ^ (input as u32 as u64).wrapping_mul(P1);
    xxh_fmix(h.rotate_left(23).wrapping_mul(P2).wrapping_add(P3)) as i64
}

/// Spark's `XXH64.hashLong(input, seed)`.
#[inline(always)]
pub fn xxhash64_long(input: i64, seed: i64) -> i64 {
    xxh_fmix(xxh_word((seed as u64).wrapping_add(P5).wrapping_add(8), input as u64)) as i64
}

/// Spark's `XXH64.hashUnsafeBytes(bytes, seed)`: standard XXH64 over little-endian words (unlike Spark's Murmur3,
/// the tail bytes are unsigned).
#[inline]
pub fn xxhash64_bytes(bytes: &[u8], seed: i64) -> i64 {
    let seed = seed as u64;
    let word = |b: &[u8]| u64::from_le_bytes(b[..8].try_into().unwrap());
    let mut rest = bytes;
    let mut h = if bytes.len() >= 32 {
        let mut v = [seed.wrapping_add(P1).wrapping_add(P2), seed.wrapping_add(P2), seed, seed.wrapping_sub(P1)];
        while rest.len() >= 32 {
            for (i, acc) in v.iter_mut().enumerate() {
                *acc = xxh_round(*acc, word(&rest[i * 8..]));
            }
            rest = &rest[32..];
        }
        let mut h = v[0]
            .rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18));
        for acc in v {
            h = xxh_merge(h, acc);
        }
        h
    } else {
        seed.wrapping_add(P5)
    };
    h = h.wrapping_add(bytes.len() as u64);
    while rest.len() >= 8 {
        h = xxh_word(h, word(rest));
        rest = &rest[8..];
    }
    if rest.len() >= 4 {
        let w = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as u64;
        h = (h ^ w.wrapping_mul(P1)).rotate_left(23).wrapping_mul(P2).wrapping_add(P3);
        rest = &rest[4..];
    }
    for &b in rest {
        h = (h ^ (b as u64).wrapping_mul(P5)).rotate_left(11).wrapping_mul(P1);
    }
    xxh_fmix(h) as i64
}

/// One of Spark's `HashExpression`s: its value hashes, each seeded by the row's running hash. The per-type
/// choices (which values hash as ints, longs or bytes; float and decimal normalisation) are the trait's, shared.
pub trait SparkHasher {
    type Hash: Copy;
    const NAME: &'static str;
    fn int(v: i32, seed: Self::Hash) -> Self::Hash;
    fn long(v: i64, seed: Self::Hash) -> Self::Hash;
    fn bytes(b: &[u8], seed: Self::Hash) -> Self::Hash;

    #[inline(always)]
    fn f32(v: f32, seed: Self::Hash) -> Self::Hash {
        Self::int(float_bits(v), seed)
    }

    #[inline(always)]
    fn f64(v: f64, seed: Self::Hash) -> Self::Hash {
        Self::long(double_bits(v), seed)
    }

    /// Precision <= 18 (`Decimal.MAX_LONG_DIGITS`) by the unscaled long, wider by the bytes of
    /// `BigInteger.toByteArray()` of the unscaled value (minimal big-endian two's complement).
    #[inline]
    fn decimal(unscaled: i128, precision: u8, seed: Self::Hash) -> Self::Hash {
        if precision <= 18 {
            Self::long(unscaled as i64, seed)
        } else {
            let be = unscaled.to_be_bytes();
            Self::bytes(&be[16 - java_byte_len(unscaled)..], seed)
        }
    }
}

/// `Murmur3Hash` (`hash()`, `HashPartitioning`): `Murmur3_x86_32`, 32-bit hashes.
pub struct Murmur3;

impl SparkHasher for Murmur3 {
    type Hash = i32;
    const NAME: &'static str = "murmur3 hash";
    #[inline(always)]
    fn int(v: i32, seed: i32) -> i32 {
        hash_int(v, seed)
    }
    #[inline(always)]
    fn long(v: i64, seed: i32) -> i32 {
        hash_long(v, seed)
    }
    #[inline(always)]
    fn bytes(b: &[u8], seed: i32) -> i32 {
        hash_bytes(b, seed)
    }
}

/// `XxHash64` (`xxhash64()`): `XXH64`, 64-bit hashes.
pub struct XxHash64;

impl SparkHasher for XxHash64 {
    type Hash = i64;
    const NAME: &'static str = "xxhash64";
    #[inline(always)]
    fn int(v: i32, seed: i64) -> i64 {
        xxhash64_int(v, seed)
    }
    #[inline(always)]
    fn long(v: i64, seed: i64) -> i64 {
        xxhash64_long(v, seed)
    }
    #[inline(always)]
    fn bytes(b: &[u8], seed: i64) -> i64 {
        xxhash64_bytes(b, seed)
    }
}

/// Spark's `pmod(hash, n)`: the partition of a hash among `n` (> 0) partitions, in `0..n`.
#[inline(always)]
pub fn pmod(hash: i32, n: u32) -> u32 {
    // `rem_euclid` of the i64 keeps n up to u32::MAX exact; for n <= i32::MAX it is Spark's ((h % n) + n) % n.
    (hash as i64).rem_euclid(n as i64) as u32
}

/// Whether [`update`] (either hash function) can hash a column of this type (a plan-time check, so an
/// unsupported key fails when the plan is built rather than on its first batch).
pub fn check_supported(dt: &DataType) -> Result<()> {
    use DataType::*;
    match dt {
        Null | Boolean | Int8 | Int16 | Int32 | Int64 | Date32 | Float32 | Float64 | Decimal128(..) | Utf8
        | LargeUtf8 | Utf8View | Binary | LargeBinary | BinaryView => Ok(()),
        Timestamp(TimeUnit::Microsecond, _) => Ok(()),
        other => Err(plan_error(format!("Spark's hash of {other} is not supported"))),
    }
}

/// Folds one key column into the rows' running Murmur3 hashes (`hashes.len() == array.len()`): a non-null value
/// replaces its row's hash with the value's hash seeded by it, a null leaves it unchanged.
pub fn update_hashes(array: &dyn Array, hashes: &mut [i32]) -> Result<()> {
    update::<Murmur3>(array, hashes)
}

/// The per-type walker of both hash functions (monomorphized: the Murmur3 path is the same code as a
/// Murmur3-only walker).
pub fn update<H: SparkHasher>(array: &dyn Array, hashes: &mut [H::Hash]) -> Result<()> {
    if array.len() != hashes.len() {
        return Err(plan_error(format!("hash of {} values into {} rows", array.len(), hashes.len())));
    }
    match array.data_type() {
        DataType::Null => {}
        DataType::Boolean => {
            let a: &BooleanArray = array.as_boolean();
            fold(a.nulls(), hashes, |i, h| H::int(a.value(i) as i32, h));
        }
        DataType::Int8 => fold_primitive::<Int8Type, _>(array, hashes, |v, h| H::int(v as i32, h)),
        DataType::Int16 => fold_primitive::<Int16Type, _>(array, hashes, |v, h| H::int(v as i32, h)),
        DataType::Int32 => fold_primitive::<Int32Type, _>(array, hashes, H::int),
        DataType::Date32 => fold_primitive::<Date32Type, _>(array, hashes, H::int),
        DataType::Int64 => fold_primitive::<Int64Type, _>(array, hashes, H::long),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            fold_primitive::<TimestampMicrosecondType, _>(array, hashes, H::long)
        }
        DataType::Float32 => fold_primitive::<Float32Type, _>(array, hashes, H::f32),
        DataType::Float64 => fold_primitive::<Float64Type, _>(array, hashes, H::f64),
        DataType::Decimal128(p, _) => {
            let p = *p;
            fold_primitive::<Decimal128Type, _>(array, hashes, |v, h| H::decimal(v, p, h))
        }
        DataType::Utf8 => fold_bytes::<_, H>(array.as_string::<i32>(), hashes),
        DataType::LargeUtf8 => fold_bytes::<_, H>(array.as_string::<i64>(), hashes),
        DataType::Binary => fold_bytes::<_, H>(array.as_binary::<i32>(), hashes),
        DataType::LargeBinary => fold_bytes::<_, H>(array.as_binary::<i64>(), hashes),
        DataType::Utf8View => {
            let a: &StringViewArray = array.as_string_view();
            fold(a.nulls(), hashes, |i, h| H::bytes(a.value(i).as_bytes(), h));
        }
        DataType::BinaryView => {
            let a: &BinaryViewArray = array.as_binary_view();
            fold(a.nulls(), hashes, |i, h| H::bytes(a.value(i), h));
        }
        other => return Err(plan_error(format!("Spark's {} of {other} is not supported", H::NAME))),
    }
    Ok(())
}

/// Spark's hash `H` of every row over `columns` (each `num_rows` long): every row starts at `seed` and folds the
/// columns in order (the shape of `HashExpression`).
pub fn hash_columns<H: SparkHasher>(columns: &[ArrayRef], num_rows: usize, seed: H::Hash) -> Result<Vec<H::Hash>> {
    let mut hashes = vec![seed; num_rows];
    for c in columns {
        update::<H>(c.as_ref(), &mut hashes)?;
    }
    Ok(hashes)
}

/// Spark's `Murmur3Hash(columns, 42)` of every row.
pub fn spark_hash(columns: &[ArrayRef], num_rows: usize) -> Result<Vec<i32>> {
    hash_columns::<Murmur3>(columns, num_rows, SPARK_HASH_SEED)
}

/// Spark's `XxHash64(columns, 42)` of every row.
pub fn spark_xxhash64(columns: &[ArrayRef], num_rows: usize) -> Result<Vec<i64>> {
    hash_columns::<XxHash64>(columns, num_rows, SPARK_HASH_SEED as i64)
}

#[inline]
fn fold<T: Copy>(nulls: Option<&arrow::buffer::NullBuffer>, hashes: &mut [T], f: impl Fn(usize, T) -> T) {
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

fn fold_primitive<T: ArrowPrimitiveType, H: Copy>(array: &dyn Array, hashes: &mut [H], f: impl Fn(T::Native, H) -> H) {
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

fn fold_bytes<T: ByteArrayType, H: SparkHasher>(a: &GenericByteArray<T>, hashes: &mut [H::Hash])
where
    T::Native: AsRef<[u8]>,
{
    fold(a.nulls(), hashes, |i, h| H::bytes(a.value(i).as_ref(), h));
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        BinaryArray, Date32Array, Decimal128Array, Float32Array, Float64Array, Int16Array, Int32Array, Int64Array,
        Int8Array, LargeStringArray, NullArray, StringArray, TimestampMicrosecondArray, UInt32Array,
    };

    use super::*;

    const MULTI_BYTE: &str = "ÿ日本語 wörld, ÿ日本語 wörld, ÿ日本語 wörld!";
    const BINARIES: [&[u8]; 8] = [
        &[],
        &[0xFF],
        &[0x80, 0xFF, 0x01],
        &[1, 2, 3, 4, 5],
        &[0xFF, 0xFF, 0xFF, 0xFF, 0xFE],
        &[0xFF; 4],
        &[0x80, 0x80, 0x80, 0x80, 0xFF],
        &[0xFF; 9],
    ];

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

    /// The prefixes of this string of lengths 0..=40 (every tail length, and the 32-byte stripes of XXH64), the
    /// whole string (62 bytes) and it twice (124 bytes) are the strings of the tests.
    const ALPHA: &str = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

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
        // hash(substr(ALPHA, 1, n)) for n in 10..=40, then hash(ALPHA), hash(ALPHA || ALPHA)
        let longer = [
            -1837419305,
            731715327,
            -1271380920,
            1587760139,
            160654196,
            828319507,
            -1791538798,
            149290010,
            -293897731,
            1393149938,
            -285019195,
            -1381928838,
            -1681139840,
            -851105125,
            -206199105,
            1610603545,
            -1990933474,
            389115080,
            -1291527240,
            -1583291490,
            718727129,
            -926699239,
            -1762287540,
            1330158035,
            1630459146,
            2006669131,
            46508703,
            -1302045403,
            1933394486,
            330441822,
            -1975683816,
        ];
        for (i, e) in longer.iter().enumerate() {
            assert_eq!(hash_bytes(&ALPHA.as_bytes()[..10 + i], 42), *e, "length {}", 10 + i);
        }
        assert_eq!(hash_bytes(ALPHA.as_bytes(), 42), 521837094);
        assert_eq!(hash_bytes(ALPHA.repeat(2).as_bytes(), 42), 856491375);
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
        // hash('ÿ日本語 wörld, ÿ日本語 wörld, ÿ日本語 wörld!') = -2082763 (51 bytes)
        assert_eq!(hash_bytes(MULTI_BYTE.as_bytes(), 42), -2082763);
        // hash(X''), hash(X'FF'), hash(X'80FF01'), hash(X'0102030405'), hash(X'FFFFFFFFFE'), hash(X'FFFFFFFF'),
        // hash(X'80808080FF'), hash(X'FFFFFFFFFFFFFFFFFF')
        let b = BinaryArray::from_vec(BINARIES.to_vec());
        assert_eq!(
            h1(Arc::new(b)),
            [142593372, 1398487324, -1935714940, -2064006189, 1013825933, -1604776387, -981853065, -1850229539]
        );
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

    // The xxhash64 values, likewise Spark 4.1.3's: spark.sql("select xxhash64(cast(1 as int)), ...").

    fn x1(a: ArrayRef) -> Vec<i64> {
        let n = a.len();
        spark_xxhash64(&[a], n).unwrap()
    }

    #[test]
    fn xxhash64_scalars_match_spark() {
        // xxhash64(cast(v as int)) for v in 0, 1, -1, 2147483647, -2147483648, 42
        for (v, e) in [
            (0, 3614696996920510707),
            (1, -6698625589789238999),
            (-1, 2017008487422258757),
            (i32::MAX, 1508894993788531228),
            (i32::MIN, 2073849959933241805),
            (42, -387659249110444264),
        ] {
            assert_eq!(xxhash64_int(v, 42), e, "{v}");
        }
        // xxhash64(cast(v as bigint)) for v in 0, 1, -1, 9223372036854775807, -9223372036854775808, 5, 1234567890123
        for (v, e) in [
            (0, -5252525462095825812),
            (1, -7001672635703045582),
            (-1, 3858142552250413010),
            (i64::MAX, -3246596055638297850),
            (i64::MIN, -8619748838626508300),
            (5, 6251837290343458373),
            (1234567890123, 1687537368341330389),
        ] {
            assert_eq!(xxhash64_long(v, 42), e, "{v}");
        }
    }

    #[test]
    fn xxhash64_integral_dates_timestamps_match_spark() {
        // xxhash64(true), xxhash64(false)
        assert_eq!(x1(Arc::new(BooleanArray::from(vec![true, false]))), [-6698625589789238999, 3614696996920510707]);
        // xxhash64(cast(1 as tinyint)), xxhash64(cast(-1 as tinyint)), xxhash64(cast(-128 as tinyint))
        assert_eq!(
            x1(Arc::new(Int8Array::from(vec![1, -1, -128]))),
            [-6698625589789238999, 2017008487422258757, 4160238337661960656]
        );
        // xxhash64(cast(1 as smallint)), xxhash64(cast(-32768 as smallint))
        assert_eq!(x1(Arc::new(Int16Array::from(vec![1, -32768]))), [-6698625589789238999, -904511417458573795]);
        assert_eq!(
            x1(Arc::new(Int32Array::from(vec![1, -1, i32::MIN]))),
            [-6698625589789238999, 2017008487422258757, 2073849959933241805]
        );
        assert_eq!(
            x1(Arc::new(Int64Array::from(vec![1, -1, i64::MIN]))),
            [-7001672635703045582, 3858142552250413010, -8619748838626508300]
        );
        // xxhash64(date'2024-01-01'), xxhash64(date'1960-06-15'), xxhash64(date'1970-01-01')
        assert_eq!(
            x1(Arc::new(Date32Array::from(vec![19723, -3487, 0]))),
            [3242891694566951137, 5699529286950586226, 3614696996920510707]
        );
        // xxhash64(timestamp'2024-01-01 00:00:00'), xxhash64(timestamp'1960-06-15 12:34:56.789012') (UTC), and
        // xxhash64(timestamp_ntz'2024-01-01 00:00:00')
        let ts = TimestampMicrosecondArray::from(vec![1_704_067_200_000_000, -301_231_503_210_988]);
        assert_eq!(x1(Arc::new(ts.clone().with_timezone("UTC"))), [3859582417520161651, -812589060639803035]);
        assert_eq!(x1(Arc::new(ts)), [3859582417520161651, -812589060639803035]);
    }

    #[test]
    #[allow(clippy::approx_constant)] // 3.14159 is the literal of the Spark query, not an approximation of pi
    fn xxhash64_floats_match_spark() {
        // xxhash64(cast(v as float)) for v in 0.0, -0.0, NaN, 1.5, -1.5, Infinity, 3.14159
        let f = Float32Array::from(vec![0.0, -0.0, f32::NAN, 1.5, -1.5, f32::INFINITY, 3.14159]);
        assert_eq!(
            x1(Arc::new(f)),
            [
                3614696996920510707,
                3614696996920510707,
                2692338816207849720,
                6163473420726370430,
                -3653657859106325556,
                -5940311692336719973,
                -4645880412135440173
            ]
        );
        assert_eq!(XxHash64::f32(f32::from_bits(0xffc0_0001), 42), 2692338816207849720);
        // xxhash64(cast(v as double)) for v in 0.0, -0.0, NaN, 1.5, -1.5, -Infinity, 3.14159
        let d = Float64Array::from(vec![0.0, -0.0, f64::NAN, 1.5, -1.5, f64::NEG_INFINITY, 3.14159]);
        assert_eq!(
            x1(Arc::new(d)),
            [
                -5252525462095825812,
                -5252525462095825812,
                -3127944061524951246,
                7738255526519901366,
                -1519168156472177911,
                5326262080505358431,
                6098026194887909299
            ]
        );
        assert_eq!(XxHash64::f64(f64::from_bits(0xfff8_0000_0000_0001), 42), -3127944061524951246);
    }

    #[test]
    fn xxhash64_decimals_match_spark() {
        // xxhash64(cast(123.45 as decimal(10,2))), xxhash64(cast(-123.45 as decimal(10,2))),
        // xxhash64(cast(0 as decimal(10,2)))
        let d = Decimal128Array::from(vec![12345, -12345, 0]).with_precision_and_scale(10, 2).unwrap();
        assert_eq!(x1(Arc::new(d)), [8791244235932249694, -4814648695243699264, -5252525462095825812]);
        // xxhash64(cast(±999999999999999999 as decimal(18,0)))
        let d = Decimal128Array::from(vec![999_999_999_999_999_999, -999_999_999_999_999_999])
            .with_precision_and_scale(18, 0)
            .unwrap();
        assert_eq!(x1(Arc::new(d)), [2162198894918931945, 4265531446127695490]);
        // xxhash64(cast(±12345678901234567.89 as decimal(20,2)))
        let d = Decimal128Array::from(vec![1_234_567_890_123_456_789, -1_234_567_890_123_456_789])
            .with_precision_and_scale(20, 2)
            .unwrap();
        assert_eq!(x1(Arc::new(d)), [6291565527293009989, 5249647118821276611]);
        // xxhash64(cast(0 as decimal(38,0))), xxhash64(cast(1 as decimal(38,10))), xxhash64(cast(-1 as decimal(38,10)))
        assert_eq!(XxHash64::decimal(0, 38, 42), -8959994473701255385);
        assert_eq!(XxHash64::decimal(10_000_000_000, 38, 42), -2853959725596059730);
        assert_eq!(XxHash64::decimal(-10_000_000_000, 38, 42), 8632574043661361134);
        // xxhash64(cast(v as decimal(19,0))) for v in 127, 128, -128, -129
        let d = Decimal128Array::from(vec![127, 128, -128, -129]).with_precision_and_scale(19, 0).unwrap();
        assert_eq!(
            x1(Arc::new(d)),
            [-5998106174972408993, 6715097930120473301, -7898411661632158123, -6459515886037897956]
        );
        // xxhash64(cast('±99999999999999999999999999999999999999' as decimal(38,0)))
        let max = 99_999_999_999_999_999_999_999_999_999_999_999_999i128;
        assert_eq!(XxHash64::decimal(max, 38, 42), -47190729175993179);
        assert_eq!(XxHash64::decimal(-max, 38, 42), -2254039905620870768);
    }

    #[test]
    fn xxhash64_strings_and_binary_match_spark() {
        // xxhash64(substr(ALPHA, 1, n)) for n in 0..=40: every tail (8-byte words, a 4-byte word, single bytes)
        // before and after the 32-byte stripes.
        let expected: [i64; 41] = [
            -7444071767201028348,
            -8582455328737087284,
            2710560539726725091,
            1423657621850124518,
            -6810745876291105281,
            -990457398947679591,
            6015085909938183043,
            3761890393722740389,
            2470326616177429180,
            -7093207067522615973,
            2022022473492580998,
            -6876501346027965189,
            3897903351825168219,
            -3720345996457672580,
            1183205894746657436,
            7657402997733166237,
            3874317801313077707,
            -8780570604781097062,
            -5223314228566481531,
            -8050658673689155985,
            8917572861163453528,
            4617420701334322238,
            5174039034254268189,
            -3477068685411359464,
            -6640076789255312451,
            -5658770379723181953,
            -3265757659154784300,
            -5253745695125809394,
            4881882087089062180,
            3212525438242432993,
            -7084104867546922075,
            -1970086447371095792,
            221923967055193886,
            1134088583240772182,
            -5110865288406611209,
            -6141723368480803397,
            2724237963427677065,
            -6555498869635072181,
            -8630293146489066018,
            -7949230879717978153,
            5903956734475236956,
        ];
        for (len, e) in expected.iter().enumerate() {
            assert_eq!(xxhash64_bytes(&ALPHA.as_bytes()[..len], 42), *e, "length {len}");
        }
        // xxhash64(ALPHA), xxhash64(ALPHA || ALPHA)
        assert_eq!(xxhash64_bytes(ALPHA.as_bytes(), 42), 6963362508556898705);
        assert_eq!(xxhash64_bytes(ALPHA.repeat(2).as_bytes(), 42), 604319545363156169);
        let strings: StringArray = (0..=40).map(|l| Some(&ALPHA[..l])).collect();
        assert_eq!(x1(Arc::new(strings)), expected);
        let large: LargeStringArray = (0..=40).map(|l| Some(&ALPHA[..l])).collect();
        assert_eq!(x1(Arc::new(large)), expected);
        let view: StringViewArray = (0..=40).map(|l| Some(&ALPHA[..l])).collect();
        assert_eq!(x1(Arc::new(view)), expected);
        // Multi-byte UTF-8: xxhash64('é'), xxhash64('日本語'), xxhash64('ÿÿÿ'), xxhash64('hello wörld!'),
        // xxhash64('ÿ日本語 wörld, ÿ日本語 wörld, ÿ日本語 wörld!')
        let s: StringArray =
            vec![Some("é"), Some("日本語"), Some("ÿÿÿ"), Some("hello wörld!"), Some(MULTI_BYTE)].into_iter().collect();
        assert_eq!(
            x1(Arc::new(s)),
            [2065146811275570100, -619341062884681239, 2453013571076045086, 7517670523127337788, 5833740853318574624]
        );
        // xxhash64(X''), xxhash64(X'FF'), xxhash64(X'80FF01'), xxhash64(X'0102030405'), xxhash64(X'FFFFFFFFFE'),
        // xxhash64(X'FFFFFFFF'), xxhash64(X'80808080FF'), xxhash64(X'FFFFFFFFFFFFFFFFFF')
        let expected = [
            -7444071767201028348,
            -4006032525457443936,
            -7525484257372978316,
            8668608334415110682,
            -7592907351710471751,
            2017008487422258757,
            1471373033398338770,
            -7973343925489633835,
        ];
        assert_eq!(x1(Arc::new(BinaryArray::from_vec(BINARIES.to_vec()))), expected);
        let bv = BinaryViewArray::from_iter_values(BINARIES);
        assert_eq!(x1(Arc::new(bv)), expected);
    }

    #[test]
    fn xxhash64_nulls_and_several_columns_match_spark() {
        // xxhash64(cast(null as int)) = 42, xxhash64(cast(null as string)) = 42, xxhash64(null) = 42
        assert_eq!(x1(Arc::new(Int32Array::from(vec![None]))), [42]);
        assert_eq!(x1(Arc::new(StringArray::from(vec![None::<&str>]))), [42]);
        assert_eq!(x1(Arc::new(NullArray::new(2))), [42, 42]);
        // xxhash64(1, 'abc'), xxhash64(cast(null as int), 'abc') (= xxhash64('abc')),
        // xxhash64(1, cast(null as string)) (= xxhash64(1))
        let got = spark_xxhash64(
            &[
                Arc::new(Int32Array::from(vec![Some(1), None, Some(1)])),
                Arc::new(StringArray::from(vec![Some("abc"), Some("abc"), None])),
            ],
            3,
        )
        .unwrap();
        assert_eq!(got, [-3712979484889829503, 1423657621850124518, -6698625589789238999]);
        // xxhash64('abc', 1): the order of the columns matters.
        let got = spark_xxhash64(&[Arc::new(StringArray::from(vec!["abc"])), Arc::new(Int32Array::from(vec![1]))], 1)
            .unwrap();
        assert_eq!(got, [615990704253164077]);
        // xxhash64(1, cast(null as string), cast(2 as bigint)), xxhash64(cast(null as int), 5L) (= xxhash64(5L))
        let got = spark_xxhash64(
            &[
                Arc::new(Int32Array::from(vec![Some(1), None])),
                Arc::new(StringArray::from(vec![None::<&str>, None])),
                Arc::new(Int64Array::from(vec![2, 5])),
            ],
            2,
        )
        .unwrap();
        assert_eq!(got, [2360248972619621018, 6251837290343458373]);
        // xxhash64(true, cast(1.5 as double), date'2024-01-01', cast(123.45 as decimal(10,2)), 'xyz')
        let got = spark_xxhash64(
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
        assert_eq!(got, [5349386031566415077]);
        // xxhash64(cast(-0.0 as double), cast('NaN' as float), cast(1 as decimal(38,10))), and hash(...) of the same
        let cols: [ArrayRef; 3] = [
            Arc::new(Float64Array::from(vec![-0.0])),
            Arc::new(Float32Array::from(vec![f32::NAN])),
            Arc::new(Decimal128Array::from(vec![10_000_000_000]).with_precision_and_scale(38, 10).unwrap()),
        ];
        assert_eq!(spark_xxhash64(&cols, 1).unwrap(), [851793563290225176]);
        assert_eq!(spark_hash(&cols, 1).unwrap(), [1802073185]);
        let err = spark_xxhash64(&[Arc::new(UInt32Array::from(vec![1]))], 1).unwrap_err();
        assert!(err.to_string().contains("xxhash64 of UInt32 is not supported"), "{err}");
    }
}
