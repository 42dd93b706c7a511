"""Random tables for the differential fuzzer: schemas, rows, and their materialization as Parquet.

A table is a dict {"name", "columns": [[name, type], ...], "rows": [[raw, ...], ...]} that JSON keeps exactly
(a saved case carries its tables this way). Raw values, per type:
  boolean: true/false; tinyint..bigint: int; float/double: Python's repr ("nan", "-0.0", "inf", "1e-45");
  decimal(p,s): its string; string/binary: hex of the bytes (strings may hold invalid UTF-8);
  date: days since 1970-01-01; timestamp/timestamp_ntz: microseconds since 1970-01-01 00:00 (UTC);
  null: None.
Every table has a unique, non-null bigint `id` (a total order for windows and ORDER BY ... LIMIT).
"""
import decimal
import struct
from decimal import Decimal

decimal.getcontext().prec = 120  # 38-digit values scaled and quantized exactly

# The column types Ember carries (docs/compatibility.md), with the kind the query grammar types them by.
SCALAR_TYPES = [
    "boolean", "tinyint", "smallint", "int", "bigint", "float", "double",
    "decimal(5,2)", "decimal(10,0)", "decimal(18,6)", "decimal(38,10)", "decimal(38,0)",
    "string", "binary", "date", "timestamp", "timestamp_ntz",
]
INT_RANGES = {
    "tinyint": (-(1 << 7), (1 << 7) - 1),
    "smallint": (-(1 << 15), (1 << 15) - 1),
    "int": (-(1 << 31), (1 << 31) - 1),
    "bigint": (-(1 << 63), (1 << 63) - 1),
}
DATE_MIN, DATE_MAX = -719162, 2932896  # 0001-01-01, 9999-12-31
TS_MIN, TS_MAX = DATE_MIN * 86_400_000_000, (DATE_MAX + 1) * 86_400_000_000 - 1


def kind_of(t):
    """The grammar's kind of a Spark type name: int, frac, dec, bool, str, bin, date, ts, ntz."""
    if t.startswith("kind:"):  # a derived table's column, typed by the grammar's kind of its expression
        return t[len("kind:"):]
    if t in INT_RANGES:
        return "int"
    if t in ("float", "double"):
        return "frac"
    if t.startswith("decimal"):
        return "dec"
    return {"boolean": "bool", "string": "str", "binary": "bin", "date": "date", "timestamp": "ts",
            "timestamp_ntz": "ntz"}[t]


def dec_ps(t):
    p, s = t[len("decimal("):-1].split(",")
    return int(p), int(s)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


# A few values of each kind shared by all tables, so that joins match and groups repeat.
SHARED_STR = [b"", b"a", b"A", b"abc", b" a ", b"1", b"-12", b"3.5", b"true", b"2024-02-29",
              b"2024-02-29 12:34:56", "\u00e9t\u00e9".encode(), "\u65e5\u672c".encode(),
              "\U0001f600x".encode(), "\u00df\u0130".encode(), b"\xff", b"a\x80b", b"\xc3",
              b"x,y,z", b"%_\\", b"NaN"]


def gen_value(rng, t, shared):
    """One random raw value of type t (never None: the caller decides nulls)."""
    r = rng.random()
    if t == "boolean":
        return rng.random() < 0.5
    if t in INT_RANGES:
        lo, hi = INT_RANGES[t]
        if r < 0.45:
            return rng.choice(shared)
        if r < 0.6:
            return rng.choice([lo, hi, 0, -1, 1, lo + 1, hi - 1])
        if r < 0.8:
            return rng.randint(-1000, 1000) if hi > 1000 else rng.randint(lo, hi)
        return rng.randint(lo, hi)
    if t in ("float", "double"):
        conv = f32 if t == "float" else float
        if r < 0.35:
            return repr(conv(rng.choice(shared)))
        if r < 0.6:
            big = 3.4028234663852886e38 if t == "float" else 1.7976931348623157e308
            tiny = 1e-45 if t == "float" else 5e-324
            return repr(conv(rng.choice([float("nan"), -0.0, 0.0, float("inf"), float("-inf"), big, -big,
                                         tiny, -tiny, 0.1, 1.5, -2.5, 1e16, 9.007199254740993e15])))
        if r < 0.8:
            return repr(conv(rng.uniform(-1000, 1000)))
        return repr(conv(rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30)))
    if t.startswith("decimal"):
        p, s = dec_ps(t)
        if r < 0.4:
            v = Decimal(rng.choice(shared))
        elif r < 0.6:
            m = 10 ** p - 1
            v = Decimal(rng.choice([m, -m, 0, 1, -1, m // 2])).scaleb(-s)
        else:
            digits = rng.randint(1, p)
            v = Decimal(rng.randint(-(10 ** digits - 1), 10 ** digits - 1)).scaleb(-s)
        q = Decimal(1).scaleb(-s)
        v = v.quantize(q)
        if abs(v) >= Decimal(10) ** (p - s):
            v = Decimal(0).quantize(q)
        return str(v)
    if t in ("string", "binary"):
        if r < 0.5:
            b = rng.choice(SHARED_STR)
        elif r < 0.8:
            alphabet = "abcAB z09-_.\u00e9\u4e2d\U0001f600"
            b = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))).encode()
        elif r < 0.93:
            b = bytes(rng.randrange(256) for _ in range(rng.randint(0, 8)))
        else:  # a huge value
            b = (rng.choice(SHARED_STR) or b"z") * rng.randint(200, 3000)
        if t == "string":
            b = complete_last_char(b)
        return b.hex()
    if t == "date":
        if r < 0.4:
            return rng.choice(shared)
        if r < 0.55:
            return rng.choice([DATE_MIN, DATE_MAX, 0, -1, -141428, -141427, 11016, 19782])  # 1582-10-14/15
        return rng.randint(-30000, 40000) if r < 0.9 else rng.randint(DATE_MIN, DATE_MAX)
    if t in ("timestamp", "timestamp_ntz"):
        if r < 0.4:
            return rng.choice(shared)
        if r < 0.55:
            return rng.choice([TS_MIN, TS_MAX, 0, -1, 1, 951782400000000, 1711846800000000])
        return rng.randint(-2_000_000_000, 4_000_000_000) * 1_000_000 + rng.randint(0, 999_999) \
            if r < 0.9 else rng.randint(TS_MIN, TS_MAX)
    raise ValueError(t)


def spark_char_bytes(first):
    """UTF8String.numBytesForFirstByte: how many bytes Spark takes for the character a byte starts."""
    if 0xC2 <= first <= 0xDF:
        return 2
    if 0xE0 <= first <= 0xEF:
        return 3
    if 0xF0 <= first <= 0xF4:
        return 4
    return 1


def complete_last_char(b):
    """b, padded so that Spark's character walk ends at its end. A string ending inside what Spark takes for a
    multi-byte character (b"\xc3") makes Spark's substring-like functions (substring, overlay, left, ...)
    copy bytes from beyond the value, whatever follows it in memory: Spark's answer is then not defined by the
    data, and Ember's JVM twin, reading another buffer, returns other bytes (open/rows-3b2e358852.json).
    Invalid UTF-8 stays: lone continuation bytes, 0xFF, a truncated sequence followed by ASCII."""
    i = 0
    while i < len(b):
        i += spark_char_bytes(b[i])
    return b + b"!" * (i - len(b))


def shared_pools(rng):
    """Per-type pools of values that every table draws from."""
    pools = {}
    for t in SCALAR_TYPES:
        if t in INT_RANGES:
            pools[t] = [rng.randint(-5, 5) for _ in range(6)]
        elif t in ("float", "double"):
            pools[t] = [rng.choice([0.0, -0.0, 1.0, 2.5, -1.0, float("nan"), 0.1]) for _ in range(5)]
        elif t.startswith("decimal"):
            p, s = dec_ps(t)
            pools[t] = [str(Decimal(rng.randint(-99, 99)).scaleb(-min(s, 2))) for _ in range(5)]
        elif t == "date":
            pools[t] = [rng.randint(19000, 19010) for _ in range(5)]
        elif t in ("timestamp", "timestamp_ntz"):
            pools[t] = [1_700_000_000_000_000 + rng.randint(0, 5) * 3_600_000_000 for _ in range(5)]
        else:
            pools[t] = None
    return pools


def gen_table(rng, name, pools, max_rows=60):
    ncols = rng.randint(3, 9)
    columns = [["id", "bigint"]]
    for i in range(ncols):
        t = rng.choice(SCALAR_TYPES)
        columns.append([f"c{i}_{short(t)}", t])
    r = rng.random()
    nrows = 0 if r < 0.04 else 1 if r < 0.08 else rng.randint(2, max_rows) if r < 0.95 else rng.randint(200, 600)
    null_rate = {name_: rng.choice([0.0, 0.1, 0.3, 0.9]) for name_, _ in columns}
    ids = rng.sample(range(-nrows * 3, nrows * 3 + 1), nrows)
    rows = []
    for n in range(nrows):
        row = [ids[n]]
        for cname, t in columns[1:]:
            row.append(None if rng.random() < null_rate[cname] else gen_value(rng, t, pools[t]))
        rows.append(row)
    return {"name": name, "columns": columns, "rows": rows}


def short(t):
    if t.startswith("decimal"):
        p, s = dec_ps(t)
        return f"d{p}_{s}"
    return {"boolean": "bool", "tinyint": "i8", "smallint": "i16", "int": "i32", "bigint": "i64", "float": "f32",
            "double": "f64", "string": "str", "binary": "bin", "date": "date", "timestamp": "ts",
            "timestamp_ntz": "ntz"}[t]


# ---- materialization -------------------------------------------------------------------------------------------

def _raw_field(t):
    from pyspark.sql import types as T
    if t == "boolean":
        return T.BooleanType()
    if t in INT_RANGES:
        return {"tinyint": T.ByteType(), "smallint": T.ShortType(), "int": T.IntegerType(),
                "bigint": T.LongType()}[t]
    if t == "float":
        return T.FloatType()
    if t == "double":
        return T.DoubleType()
    if t.startswith("decimal"):
        return T.DecimalType(*dec_ps(t))
    if t in ("string", "binary"):
        return T.BinaryType()
    if t == "date":
        return T.IntegerType()
    return T.LongType()


def _to_python(t, v):
    if v is None:
        return None
    if t in ("float", "double"):
        return float(v)
    if t.startswith("decimal"):
        return Decimal(v)
    if t in ("string", "binary"):
        return bytearray(bytes.fromhex(v))
    return v


def _cast_sql(name, t):
    q = f"`{name}`"
    if t == "string":
        return f"CAST({q} AS STRING) AS {q}"
    if t == "date":
        return f"date_from_unix_date({q}) AS {q}"
    if t == "timestamp":
        return f"timestamp_micros({q}) AS {q}"
    if t == "timestamp_ntz":
        # The session runs in UTC: the local date-time of the instant is its UTC date-time.
        return f"CAST(timestamp_micros({q}) AS TIMESTAMP_NTZ) AS {q}"
    return q


def materialize(spark, table, path, partitions=2):
    """Writes the table as Parquet at path (Spark's own writer, Ember off) and registers it as a temp view."""
    from pyspark.sql import types as T
    schema = T.StructType([T.StructField(n, _raw_field(t), True) for n, t in table["columns"]])
    rows = [tuple(_to_python(t, v) for (_, t), v in zip(table["columns"], row)) for row in table["rows"]]
    prev = spark.conf.get("spark.ember.enabled", "true")
    spark.conf.set("spark.ember.enabled", "false")
    spark.conf.set("spark.sql.session.timeZone", "UTC")  # timestamp_ntz values: the UTC date-time of the micros
    try:
        df = spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), schema)
        df.selectExpr(*[_cast_sql(n, t) for n, t in table["columns"]]).write.mode("overwrite").parquet(path)
    finally:
        spark.conf.set("spark.ember.enabled", prev)
    spark.read.parquet(path).createOrReplaceTempView(table["name"])
