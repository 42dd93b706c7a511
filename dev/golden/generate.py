"""Regenerates the golden tables of Ember's Rust tests from Spark 4.1.3's own Catalyst expressions.

    dev/.venv/bin/python dev/golden/generate.py [--check] [decimal] [cast] [jdk] [functions]     (make golden)

Each table lists its cases itself: this script keeps every line's inputs and recomputes everything Spark decides
(result types, values, errors), evaluating the expressions through py4j in the JVM PySpark starts, with each
operand bound from a row as Spark reads it from a column. To add a case, add a line with its inputs (the other
columns anything) and run the script. With --check, nothing is written: the differences are printed and the exit
status is 1 if there are any.

- decimal: native/engine/tests/data/decimal_arithmetic_spark.tsv. Add / Subtract / Multiply / Divide / Remainder
  / IntegralDivide with NumericEvalContext(mode, allowPrecisionLoss) in LEGACY, ANSI and TRY, and UnaryMinus.
  Columns: op, left (p,s), right (p,s), result type, left unscaled, right unscaled, then the LEGACY, ANSI and TRY
  results; `neg` lines have `-` for the right operand and one result. The result type column also picks
  allowPrecisionLoss: the setting (true first) under which Spark gives that type; a new line may say `loss` or
  `noloss` there instead.
- cast: native/engine/src/expressions/cast/golden.rs. Cast(value, to, zone, mode) in LEGACY, ANSI and TRY:
  GOLDEN is JDK 17's, GOLDEN_JDK25 JDK 25's (its lines are those where the two JDKs' float/double text differs);
  only the table of the JVM running this script is regenerated (set JAVA_HOME to choose). Values are Spark's
  internal ones as text (dates in days, timestamps in microseconds, decimals unscaled; floats and doubles as Java
  parses them), results likewise, or `NULL`, `ERR <class> <condition> <parameters>`, `EXC <exception>`; strings
  in Rust escapes. A BINARY result keeps its recorded text (Java's byte[] identity, different in every JVM).
- functions: native/engine/tests/data/functions_spark.tsv, the built-in functions Ember evaluates natively
  (planner/functions.rs). Columns: function, argument types (comma-separated), one column per argument, then
  the LEGACY and the ANSI result. Values as Spark's internal ones (dates in days, timestamps (`ts`) in
  microseconds, doubles as Java prints them, strings in Rust escapes, binaries in hex digits), `\\N` for NULL; an
  error is `ERR <condition> <parameters>`, a Java exception without one `EXC <class>`. The types column may end in
  `@<zone>`: the session time zone of that line (time-zone-aware expressions get it; default UTC); an empty types
  column is a function without arguments (`e`, `pi`). Lines with `-`
  for both results list inputs only: running the script fills them in.
- jdk: native/engine/src/expressions/cast/jdk_golden.rs, Double.toString / Float.toString of the listed bit
  patterns; needs JDK 19 or later (the shortest-repr algorithm), and is skipped on older JVMs.
"""
import os
import re
import sys

from pyspark.java_gateway import launch_gateway

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DECIMAL_TSV = os.path.join(ROOT, "native/engine/tests/data/decimal_arithmetic_spark.tsv")
CAST_RS = os.path.join(ROOT, "native/engine/src/expressions/cast/golden.rs")
FUNCTIONS_TSV = os.path.join(ROOT, "native/engine/tests/data/functions_spark.tsv")
JDK_RS = os.path.join(ROOT, "native/engine/src/expressions/cast/jdk_golden.rs")


class Spark:
    """Catalyst through py4j: build expressions, evaluate one over a row, render the outcome."""

    def __init__(self):
        # Error messages print TIMESTAMP values in the session zone, which defaults to the JVM's: UTC, as recorded.
        os.environ["TZ"] = "UTC"
        self.gw = launch_gateway()
        self.jvm = self.gw.jvm
        self.E = self.jvm.org.apache.spark.sql.catalyst.expressions
        self.T = self.jvm.org.apache.spark.sql.types
        self.jdk = self.jvm.java.lang.Runtime.version().feature()
        self.modes = [self.E.EvalMode.LEGACY(), self.E.EvalMode.ANSI(), self.E.EvalMode.TRY()]
        self.types = {}

    def type(self, ddl):
        if ddl not in self.types:
            self.types[ddl] = self.T.DataType.fromDDL(ddl)
        return self.types[ddl]

    def seq(self, *xs):
        lst = self.jvm.java.util.ArrayList()
        for x in xs:
            lst.add(x)
        return self.jvm.scala.jdk.javaapi.CollectionConverters.asScala(lst).toSeq()

    def bound(self, i, ddl):
        return self.E.BoundReference(i, self.type(ddl), True)

    def decimal(self, unscaled, p, s):
        """A Decimal as UnsafeRow.getDecimal returns it: long-backed up to 18 digits, else BigDecimal-backed."""
        D = self.T.Decimal
        if p <= 18:
            return D.createUnsafe(int(unscaled), p, s)
        big = self.jvm.java.math.BigDecimal(self.jvm.java.math.BigInteger(unscaled), s)
        return D.apply(big, p, s)

    def generic_row(self, values):
        arr = self.gw.new_array(self.jvm.java.lang.Object, len(values))
        for i, v in enumerate(values):
            arr[i] = v
        return self.E.GenericInternalRow(arr)

    def evaluate(self, expr, row):
        """(None, output row) or (exception, None)."""
        from py4j.protocol import Py4JJavaError

        try:
            return None, self.E.InterpretedProjection(self.seq(expr)).apply(row)
        except Py4JJavaError as e:
            return e.java_exception, None


# ---- decimal arithmetic ------------------------------------------------------------------------------------

BINARY = {"add": "Add", "sub": "Subtract", "mul": "Multiply", "div": "Divide", "rem": "Remainder",
          "idiv": "IntegralDivide"}


def decimal_type_name(dt):
    m = re.fullmatch(r"decimal\((\d+),(\d+)\)", dt.simpleString())
    if m:
        return f"d{m.group(1)},{m.group(2)}"
    assert dt.simpleString() == "bigint", dt.simpleString()
    return "i64"


def condition(err):
    """A Spark error's condition (error class), or None for a plain Java exception."""
    try:
        return err.getCondition()
    except Exception:  # py4j: no such method
        return None


def decimal_outcome(spark, expr, row):
    err, out = spark.evaluate(expr, row)
    if err is not None:
        if condition(err):
            params = err.getMessageParameters()
            kv = sorted((k, params.get(k)) for k in params.keySet())
            return "E:" + condition(err) + "".join(f";{k}={v}" for k, v in kv)
        return f"X:{err.getClass().getName()}:{err.getMessage()}"
    if out.isNullAt(0):
        return "null"
    dt = expr.dataType()
    if dt.simpleString() == "bigint":
        return str(out.getLong(0))
    return out.get(0, dt).toPlainString()


def decimal_lines(spark, lines):
    out = []
    for line in lines:
        f = line.split("\t")
        op, lt, rt, rtype, a, b = f[0], f[1], f[2], f[3], f[4], f[5]
        lp, ls = map(int, lt.split(","))
        left = spark.decimal(a, lp, ls)
        if op == "neg":
            row = spark.generic_row([left])
            expr = spark.E.UnaryMinus(spark.bound(0, f"decimal({lp},{ls})"), False)
            out.append("\t".join([op, lt, "-", decimal_type_name(expr.dataType()), a, "-",
                                  decimal_outcome(spark, expr, row)]))
            continue
        rp, rs = map(int, rt.split(","))
        row = spark.generic_row([left, spark.decimal(b, rp, rs)])
        l_ref, r_ref = spark.bound(0, f"decimal({lp},{ls})"), spark.bound(1, f"decimal({rp},{rs})")
        cls = getattr(spark.E, BINARY[op])

        def make(mode, loss):
            return cls(l_ref, r_ref, spark.E.NumericEvalContext(mode, loss))

        if rtype in ("loss", "noloss"):
            loss = rtype == "loss"
        else:
            loss = next((x for x in (True, False) if decimal_type_name(make(spark.modes[0], x).dataType()) == rtype),
                        None)
            if loss is None:
                raise SystemExit(f"decimal: Spark gives neither setting the result type {rtype}: {line}")
        exprs = [make(m, loss) for m in spark.modes]
        out.append("\t".join([op, lt, rt, decimal_type_name(exprs[0].dataType()), a, b]
                             + [decimal_outcome(spark, e, row) for e in exprs]))
    return out


def regenerate_decimal(spark):
    with open(DECIMAL_TSV) as f:
        lines = [x for x in f.read().split("\n") if x]
    return {DECIMAL_TSV: "\n".join(decimal_lines(spark, lines)) + "\n"}


# ---- casts -------------------------------------------------------------------------------------------------

CAST_TYPES = {"int": "int", "bigint": "bigint", "smallint": "smallint", "tinyint": "tinyint", "boolean": "boolean",
              "double": "double", "float": "float", "string": "string", "binary": "binary", "date": "date",
              "ts": "timestamp", "ntz": "timestamp_ntz"}


def cast_ddl(name):
    m = re.fullmatch(r"dec\((\d+),(-?\d+)\)", name)
    return f"decimal({int(m.group(1))},{int(m.group(2))})" if m else CAST_TYPES[name]


def rust_unescape(s):
    return re.sub(r'\\u\{([0-9a-f]+)\}|\\(.)',
                  lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), s)


def rust_escape(s):
    out = []
    for c in s:
        if c in '\\"':
            out.append("\\" + c)
        elif 0x20 <= ord(c) < 0x7F:
            out.append(c)
        else:
            out.append("\\u{%x}" % ord(c))
    return "".join(out)


def cast_input(spark, ty, value):
    """A one-column row holding `value` (the table's text) as type `ty`, as Spark reads it from a column."""
    jvm = spark.jvm
    if ty == "string" or ty.startswith("dec("):
        if ty == "string":
            v = jvm.org.apache.spark.unsafe.types.UTF8String.fromString(value)
        else:
            p, s = map(int, re.fullmatch(r"dec\((\d+),(\d+)\)", ty).groups())
            v = spark.decimal(value, p, s)  # the table gives a decimal's unscaled value
        return spark.generic_row([v])
    row = spark.E.UnsafeRow(1)
    row.pointTo(spark.gw.new_array(jvm.byte, 16), 16)
    if ty == "boolean":
        row.setBoolean(0, value == "true")
    elif ty == "tinyint":
        row.setByte(0, int(value))
    elif ty == "smallint":
        row.setShort(0, int(value))
    elif ty in ("int", "date"):
        row.setInt(0, int(value))
    elif ty in ("bigint", "ts", "ntz"):
        row.setLong(0, int(value))
    elif ty == "double":
        row.setDouble(0, jvm.java.lang.Double.parseDouble(value))
    elif ty == "float":
        row.setFloat(0, jvm.java.lang.Float.parseFloat(value))
    else:
        raise SystemExit(f"cast: unknown source type {ty}")
    return row


def cast_outcome(spark, expr, row):
    err, out = spark.evaluate(expr, row)
    if err is not None:
        if condition(err):
            return f"ERR {err.getClass().getSimpleName()} {condition(err)} {err.getMessageParameters().toString()}"
        return f"EXC {err.toString()}"
    if out.isNullAt(0):
        return "NULL"
    return out.toString()[1:-1]


TUPLE = re.compile(r'    \(((?:"(?:[^"\\]|\\.)*"(?:, )?){7})\),')


def cast_lines(spark, body):
    out = []
    for line in body:
        m = TUPLE.fullmatch(line)
        if not m:
            raise SystemExit(f"cast: not a golden line: {line}")
        fields = [rust_unescape(x) for x in re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))]
        src, to, value, zone = fields[:4]
        row = cast_input(spark, src, value)
        child = spark.E.BoundReference(0, spark.type(cast_ddl(src)), True)
        zone_opt = spark.jvm.scala.Option.apply(zone)
        results = [cast_outcome(spark, spark.E.Cast(child, spark.type(cast_ddl(to)), zone_opt, mode), row)
                   for mode in spark.modes]
        # A BINARY result prints as Java's byte[] identity ("[B@1b2c3d"), different in every JVM: the recorded
        # text stays (the Rust test compares the bytes with the input instead).
        results = [old if re.fullmatch(r"\[B@[0-9a-f]+", new) and re.fullmatch(r"\[B@[0-9a-f]+", old) else new
                   for new, old in zip(results, fields[4:])]
        out.append("    (" + ", ".join(f'"{rust_escape(x)}"' for x in [src, to, value, zone] + results) + "),")
    return out


def regenerate_cast(spark):
    with open(CAST_RS) as f:
        lines = f.read().split("\n")
    table = {17: "GOLDEN", 25: "GOLDEN_JDK25"}.get(spark.jdk)
    if table is None:
        print(f"cast: JDK {spark.jdk} has no table in golden.rs (17: GOLDEN, 25: GOLDEN_JDK25); skipped",
              file=sys.stderr)
        return {}
    start = lines.index(f"pub const {table}: &[(&str, &str, &str, &str, &str, &str, &str)] = &[") + 1
    end = lines.index("];", start)
    lines[start:end] = cast_lines(spark, lines[start:end])
    return {CAST_RS: "\n".join(lines)}


# ---- built-in functions ------------------------------------------------------------------------------------

def function_builders(spark):
    """Spark function name (as in planner/functions.rs) → (arguments, mode) → the Catalyst expression."""
    E = spark.E
    none = spark.jvm.scala.Option.empty()

    def aliased(expr, alias):
        expr.setTagValue(spark.jvm.org.apache.spark.sql.catalyst.analysis.FunctionRegistry.FUNC_ALIAS(), alias)
        return expr

    fmt = spark.E.Literal(spark.jvm.org.apache.spark.unsafe.types.UTF8String.fromString("yyyy-MM-dd HH:mm:ss"),
                          spark.type("string"))
    return {
        # The pattern is a literal, as Ember requires; the escape character is the third argument's text.
        "like": lambda a, m, v: E.Like(a[0], spark.E.Literal(v[1], spark.type("string")), v[2].toString()[0]),
        "startswith": lambda a, m, v: E.StartsWith(a[0], a[1]),
        "endswith": lambda a, m, v: E.EndsWith(a[0], a[1]),
        "contains": lambda a, m, v: E.Contains(a[0], a[1]),
        "substring": lambda a, m, v: E.Substring(a[0], a[1], a[2]),
        "length": lambda a, m, v: E.Length(a[0]),
        "octet_length": lambda a, m, v: E.OctetLength(a[0]),
        "bit_length": lambda a, m, v: E.BitLength(a[0]),
        "year": lambda a, m, v: E.Year(a[0]),
        "quarter": lambda a, m, v: E.Quarter(a[0]),
        "month": lambda a, m, v: E.Month(a[0]),
        "day": lambda a, m, v: E.DayOfMonth(a[0]),
        "dayofyear": lambda a, m, v: E.DayOfYear(a[0]),
        "dayofweek": lambda a, m, v: E.DayOfWeek(a[0]),
        "weekday": lambda a, m, v: E.WeekDay(a[0]),
        "date_add": lambda a, m, v: E.DateAdd(a[0], a[1]),
        "date_sub": lambda a, m, v: E.DateSub(a[0], a[1]),
        "datediff": lambda a, m, v: E.DateDiff(a[0], a[1]),
        "pmod": lambda a, m, v: E.Pmod(a[0], a[1], E.NumericEvalContext(m, True)),
        "bit_and": lambda a, m, v: E.BitwiseAnd(a[0], a[1]),
        "bit_or": lambda a, m, v: E.BitwiseOr(a[0], a[1]),
        "bit_xor": lambda a, m, v: E.BitwiseXor(a[0], a[1]),
        "bit_not": lambda a, m, v: E.BitwiseNot(a[0]),
        "shiftleft": lambda a, m, v: E.ShiftLeft(a[0], a[1]),
        "shiftright": lambda a, m, v: E.ShiftRight(a[0], a[1]),
        "shiftrightunsigned": lambda a, m, v: E.ShiftRightUnsigned(a[0], a[1]),
        "isnan": lambda a, m, v: E.IsNaN(a[0]),
        "nanvl": lambda a, m, v: E.NaNvl(a[0], a[1]),
        "sqrt": lambda a, m, v: E.Sqrt(a[0]),
        "signum": lambda a, m, v: E.Signum(a[0]),
        "greatest": lambda a, m, v: E.Greatest(spark.seq(*a)),
        "least": lambda a, m, v: E.Least(spark.seq(*a)),
        "ascii": lambda a, m, v: E.Ascii(a[0]),
        "chr": lambda a, m, v: E.Chr(a[0]),
        "reverse": lambda a, m, v: E.Reverse(a[0]),
        "weekofyear": lambda a, m, v: E.WeekOfYear(a[0]),
        "last_day": lambda a, m, v: E.LastDay(a[0]),
        "abs": lambda a, m, v: E.Abs(a[0], m == spark.modes[1]),
        "trunc": lambda a, m, v: E.TruncDate(a[0], a[1]),
        # Upper / Lower / InitCap read spark.sql.icu.caseMappings.enabled: its default (true), as Ember requires.
        "upper": lambda a, m, v: E.Upper(a[0]),
        "lower": lambda a, m, v: E.Lower(a[0]),
        "initcap": lambda a, m, v: E.InitCap(a[0]),
        # StringTrim(a, b) would be (trimStr, srcStr): the table's columns are the children, (srcStr, trimStr).
        "trim": lambda a, m, v: E.StringTrim(a[0], spark.jvm.scala.Option.apply(a[1])) if len(a) > 1 else E.StringTrim(a[0]),
        "ltrim": lambda a, m, v: E.StringTrimLeft(a[0], spark.jvm.scala.Option.apply(a[1])) if len(a) > 1 else E.StringTrimLeft(a[0]),
        "rtrim": lambda a, m, v: E.StringTrimRight(a[0], spark.jvm.scala.Option.apply(a[1])) if len(a) > 1 else E.StringTrimRight(a[0]),
        "lpad": lambda a, m, v: E.StringLPad(a[0], a[1], a[2]),
        "rpad": lambda a, m, v: E.StringRPad(a[0], a[1], a[2]),
        "replace": lambda a, m, v: E.StringReplace(a[0], a[1], a[2]),
        "translate": lambda a, m, v: E.StringTranslate(a[0], a[1], a[2]),
        "instr": lambda a, m, v: E.StringInstr(a[0], a[1]),
        "locate": lambda a, m, v: E.StringLocate(a[0], a[1], a[2]),
        "concat": lambda a, m, v: E.Concat(spark.seq(*a)),
        "concat_ws": lambda a, m, v: E.ConcatWs(spark.seq(*a)),
        "repeat": lambda a, m, v: E.StringRepeat(a[0], a[1]),
        "levenshtein": lambda a, m, v: E.Levenshtein(a[0], a[1], a[2]) if len(a) > 2 else E.Levenshtein(a[0], a[1]),
        "soundex": lambda a, m, v: E.SoundEx(a[0]),
        "substring_index": lambda a, m, v: E.SubstringIndex(a[0], a[1], a[2]),
        # Time-zone-aware expressions get the line's zone afterwards (function_lines: withTimeZone).
        "hour": lambda a, m, v: E.Hour(a[0], none),
        "minute": lambda a, m, v: E.Minute(a[0], none),
        "second": lambda a, m, v: E.Second(a[0], none),
        "date_trunc": lambda a, m, v: E.TruncTimestamp(a[0], a[1], none),
        # The zone is a literal, as Ember requires.
        "from_utc_timestamp": lambda a, m, v: E.FromUTCTimestamp(a[0], spark.E.Literal(v[1], spark.type("string"))),
        "to_utc_timestamp": lambda a, m, v: E.ToUTCTimestamp(a[0], spark.E.Literal(v[1], spark.type("string"))),
        "unix_seconds": lambda a, m, v: E.UnixSeconds(a[0]),
        "unix_millis": lambda a, m, v: E.UnixMillis(a[0]),
        "unix_micros": lambda a, m, v: E.UnixMicros(a[0]),
        "unix_timestamp": lambda a, m, v: E.UnixTimestamp(a[0], fmt, none, m == spark.modes[1]),
        "to_unix_timestamp": lambda a, m, v: E.ToUnixTimestamp(a[0], fmt, none, m == spark.modes[1]),
        "timestamp_seconds": lambda a, m, v: E.SecondsToTimestamp(a[0]),
        "timestamp_millis": lambda a, m, v: E.MillisToTimestamp(a[0]),
        "timestamp_micros": lambda a, m, v: E.MicrosToTimestamp(a[0]),
        "add_months": lambda a, m, v: E.AddMonths(a[0], a[1]),
        "months_between": lambda a, m, v: E.MonthsBetween(a[0], a[1], a[2], none),
        "next_day": lambda a, m, v: E.NextDay(a[0], a[1], m == spark.modes[1]),
        "make_date": lambda a, m, v: E.MakeDate(a[0], a[1], a[2], m == spark.modes[1]),
        "cbrt": lambda a, m, v: E.Cbrt(a[0]),
        "exp": lambda a, m, v: E.Exp(a[0]),
        "expm1": lambda a, m, v: E.Expm1(a[0]),
        "ln": lambda a, m, v: E.Log(a[0]),
        "log2": lambda a, m, v: E.Log2(a[0]),
        "log10": lambda a, m, v: E.Log10(a[0]),
        "log1p": lambda a, m, v: E.Log1p(a[0]),
        "asin": lambda a, m, v: E.Asin(a[0]),
        "acos": lambda a, m, v: E.Acos(a[0]),
        "atan": lambda a, m, v: E.Atan(a[0]),
        "sinh": lambda a, m, v: E.Sinh(a[0]),
        "cosh": lambda a, m, v: E.Cosh(a[0]),
        "tanh": lambda a, m, v: E.Tanh(a[0]),
        "asinh": lambda a, m, v: E.Asinh(a[0]),
        "acosh": lambda a, m, v: E.Acosh(a[0]),
        "atanh": lambda a, m, v: E.Atanh(a[0]),
        "degrees": lambda a, m, v: E.ToDegrees(a[0]),
        "radians": lambda a, m, v: E.ToRadians(a[0]),
        "rint": lambda a, m, v: E.Rint(a[0]),
        "atan2": lambda a, m, v: E.Atan2(a[0], a[1]),
        "power": lambda a, m, v: E.Pow(a[0], a[1]),
        "hypot": lambda a, m, v: E.Hypot(a[0], a[1]),
        "log": lambda a, m, v: E.Logarithm(a[0], a[1]),
        "floor": lambda a, m, v: E.Floor(a[0]),
        "ceil": lambda a, m, v: E.Ceil(a[0]),
        # The scale is a literal (Spark requires it foldable), as the JVM side sends it.
        "round": lambda a, m, v: E.Round(a[0], E.Literal(v[1], spark.type("int")), m == spark.modes[1]),
        "bround": lambda a, m, v: E.BRound(a[0], E.Literal(v[1], spark.type("int")), m == spark.modes[1]),
        "factorial": lambda a, m, v: E.Factorial(a[0]),
        "hex": lambda a, m, v: E.Hex(a[0]),
        "unhex": lambda a, m, v: E.Unhex(a[0]),
        "bin": lambda a, m, v: E.Bin(a[0]),
        "width_bucket": lambda a, m, v: E.WidthBucket(a[0], a[1], a[2], a[3]),
        "md5": lambda a, m, v: E.Md5(a[0]),
        "sha1": lambda a, m, v: E.Sha1(a[0]),
        "sha2": lambda a, m, v: E.Sha2(a[0], a[1]),
        "crc32": lambda a, m, v: E.Crc32(a[0]),
        # unbase64() itself (failOnError is to_binary's base64 format).
        "unbase64": lambda a, m, v: E.UnBase64(a[0], False),
        "bit_count": lambda a, m, v: E.BitwiseCount(a[0]),
        "bit_get": lambda a, m, v: E.BitwiseGet(a[0], a[1]),
        # getbit: the same expression under its alias (FunctionRegistry's FUNC_ALIAS tag, its prettyName).
        "getbit": lambda a, m, v: aliased(E.BitwiseGet(a[0], a[1]), "getbit"),
        "date_from_unix_date": lambda a, m, v: E.DateFromUnixDate(a[0]),
        "unix_date": lambda a, m, v: E.UnixDate(a[0]),
        "dayname": lambda a, m, v: E.DayName(a[0]),
        "monthname": lambda a, m, v: E.MonthName(a[0]),
        "e": lambda a, m, v: E.EulerNumber(),
        "pi": lambda a, m, v: E.Pi(),
        "space": lambda a, m, v: E.StringSpace(a[0]),
        "elt": lambda a, m, v: E.Elt(spark.seq(*a), m == spark.modes[1]),
        "find_in_set": lambda a, m, v: E.FindInSet(a[0], a[1]),
        "overlay": lambda a, m, v: E.Overlay(a[0], a[1], a[2], a[3]),
        # base64 and luhn_check as the StaticInvoke Spark rewrites them to (what reaches Ember); base64's second
        # argument is spark.sql.chunkBase64String.enabled, a literal flag in that StaticInvoke.
        "base64": lambda a, m, v: E.Base64(a[0], bool(v[1])).replacement(),
        "luhn_check": lambda a, m, v: E.Luhncheck(a[0]).replacement(),
        "conv": lambda a, m, v: E.Conv(a[0], a[1], a[2], m == spark.modes[1]),
        # The StaticInvokes / Invokes Spark rewrites these to; url_decode's second argument is failOnError
        # (true for url_decode, false for try_url_decode).
        "url_encode": lambda a, m, v: E.UrlEncode(a[0]).replacement(),
        "url_decode": lambda a, m, v: E.UrlDecode(a[0], bool(v[1])).replacement(),
        "quote": lambda a, m, v: E.Quote(a[0]).replacement(),
        "is_valid_utf8": lambda a, m, v: E.IsValidUTF8(a[0]).replacement(),
        "make_valid_utf8": lambda a, m, v: E.MakeValidUTF8(a[0]).replacement(),
        "validate_utf8": lambda a, m, v: E.ValidateUTF8(a[0]).replacement(),
        "try_validate_utf8": lambda a, m, v: E.TryValidateUTF8(a[0]).replacement(),
        # encode / decode as their StaticInvokes: the charset a literal, then the legacyCharsets and
        # legacyErrorAction flags (spark.sql.legacy.javaCharsets / codingErrorAction) as the table gives them.
        "encode": lambda a, m, v: E.Encode(a[0], E.Literal(v[1], spark.type("string")), bool(v[2]),
                                           bool(v[3])).replacement(),
        "decode": lambda a, m, v: E.StringDecode(a[0], E.Literal(v[1], spark.type("string")), bool(v[2]),
                                                 bool(v[3])).replacement(),
    }


def function_row(spark, types, texts):
    """The arguments as a row (as Spark reads them from columns) and as JVM values."""
    jvm = spark.jvm
    row = spark.E.GenericInternalRow(len(types))
    values = []
    for i, (ty, text) in enumerate(zip(types, texts)):
        if text == "\\N":
            row.setNullAt(i)
            values.append(None)
            continue
        if ty == "string":
            v = jvm.org.apache.spark.unsafe.types.UTF8String.fromString(rust_unescape(text))
            row.update(i, v)
        elif ty == "tinyint":
            v = int(text)
            row.setByte(i, v)
        elif ty == "smallint":
            v = int(text)
            row.setShort(i, v)
        elif ty in ("int", "date"):
            v = int(text)
            row.setInt(i, v)
        elif ty in ("bigint", "ts"):
            v = int(text)
            row.setLong(i, v)
        elif ty == "boolean":
            v = text == "true"
            row.setBoolean(i, v)
        elif ty == "double":
            v = jvm.java.lang.Double.parseDouble(text)
            row.setDouble(i, v)
        elif ty == "float":
            v = jvm.java.lang.Float.parseFloat(text)
            row.setFloat(i, v)
        elif ty.startswith("decimal("):  # plain text at the type's scale
            p, sc = map(int, ty[len("decimal("):-1].split(","))
            v = spark.T.Decimal.apply(jvm.java.math.BigDecimal(text), p, sc)
            row.update(i, v)
        elif ty == "binary":  # hex digits
            v = bytearray(bytes.fromhex(text))
            row.update(i, v)
        else:
            raise SystemExit(f"functions: unknown argument type {ty}")
        values.append(v)
    return row, values


def function_outcome(spark, expr, row):
    err, out = spark.evaluate(expr, row)
    if err is not None:
        if condition(err):
            params = err.getMessageParameters()
            kv = sorted((k, params.get(k)) for k in params.keySet())
            return "ERR " + condition(err) + "".join(f";{k}={v}" for k, v in kv)
        return f"EXC {err.getClass().getName()}"
    if out.isNullAt(0):
        return "\\N"
    dt = expr.dataType().simpleString()
    if dt == "string":
        return rust_escape(out.getUTF8String(0).toString())
    if dt == "date":
        return str(out.getInt(0))
    if dt == "boolean":
        return "true" if out.getBoolean(0) else "false"
    if dt == "double":
        return spark.jvm.java.lang.Double.toString(out.getDouble(0))
    if dt == "float":
        return spark.jvm.java.lang.Float.toString(out.getFloat(0))
    if dt == "binary":
        return bytes(out.getBinary(0)).hex()
    if dt.startswith("decimal("):
        t = expr.dataType()
        return format(out.getDecimal(0, t.precision(), t.scale()).toJavaBigDecimal(), "f")
    return str(out.get(0, expr.dataType()))


def function_lines(spark, lines):
    builders = function_builders(spark)
    out = []
    for line in lines:
        f = line.split("\t")
        name, zone = f[0], "UTC"
        types_text = f[1]
        if "@" in types_text:
            types_text, zone = types_text.split("@", 1)
        # An empty types column: a function without arguments (`e`, `pi`).
        types = re.split(r",(?![^(]*\))", types_text) if types_text else []
        texts = f[2:2 + len(types)]
        if len(f) != 4 + len(types):
            raise SystemExit(f"functions: {len(types)} arguments and two results expected: {line}")
        row, values = function_row(spark, types, texts)
        refs = [spark.bound(i, "timestamp" if t == "ts" else t) for i, t in enumerate(types)]
        if name == "like" and values[2] is None:
            raise SystemExit(f"functions: LIKE needs an escape character: {line}")
        results = []
        for mode in spark.modes[:2]:
            try:
                expr = builders[name](refs, mode, values)
                try:
                    expr = expr.withTimeZone(zone)
                except Exception:  # noqa: BLE001 -- not a TimeZoneAwareExpression
                    pass
            except Exception as e:  # noqa: BLE001 -- a constructor Spark rejects: no such case in the table
                raise SystemExit(f"functions: cannot build {line}: {e}")
            results.append(function_outcome(spark, expr, row))
        out.append("\t".join([name, f[1]] + texts + results))
    return out


def regenerate_functions(spark):
    with open(FUNCTIONS_TSV) as f:
        lines = [x for x in f.read().split("\n") if x and not x.startswith("#")]
    return {FUNCTIONS_TSV: "\n".join(function_lines(spark, lines)) + "\n"}


# ---- JDK float/double text ---------------------------------------------------------------------------------

def regenerate_jdk(spark):
    if spark.jdk < 19:
        print(f"jdk: JDK {spark.jdk} predates the JDK 19 Double.toString; skipped", file=sys.stderr)
        return {}
    jl = spark.jvm.java.lang
    with open(JDK_RS) as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        m = re.fullmatch(r"([df]) ([0-9a-f]+) (\S+)\\n\\", line)
        if not m:
            continue
        kind, bits = m.group(1), m.group(2)
        if kind == "d":
            text = jl.Double.toString(jl.Double.longBitsToDouble(jl.Long.parseUnsignedLong(bits, 16)))
        else:
            text = jl.Float.toString(jl.Float.intBitsToFloat(jl.Integer.parseUnsignedInt(bits, 16)))
        lines[i] = f"{kind} {bits} {text}\\n\\"
    return {JDK_RS: "\n".join(lines)}


def main(argv):
    check = "--check" in argv
    which = [a for a in argv if a != "--check"] or ["decimal", "cast", "jdk", "functions"]
    spark = Spark()
    print(f"JDK {spark.jdk}", file=sys.stderr)
    files = {}
    for w in which:
        files.update({"decimal": regenerate_decimal, "cast": regenerate_cast, "jdk": regenerate_jdk,
                     "functions": regenerate_functions}[w](spark))
    changed = 0
    for path, text in files.items():
        with open(path) as f:
            old = f.read()
        rel = os.path.relpath(path, ROOT)
        if old == text:
            print(f"{rel}: unchanged", file=sys.stderr)
            continue
        changed += 1
        if check:
            import difflib
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True), rel, rel))
        else:
            with open(path, "w") as f:
                f.write(text)
            print(f"{rel}: rewritten", file=sys.stderr)
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
