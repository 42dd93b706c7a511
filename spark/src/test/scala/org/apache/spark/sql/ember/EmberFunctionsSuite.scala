package org.apache.spark.sql.ember

import org.apache.spark.sql.ember.execution._

/**
 * Spark's built-in functions Ember evaluates natively (FunctionSerde / planner/functions.rs), Ember off vs on
 * over random data with nulls, extremes, multi-byte and empty strings, ANSI on and off. One query with many
 * columns per mode keeps it fast; the kernels' corner cases are the Rust golden tables' (tests/engine/functions_spark.rs).
 */
class EmberFunctionsSuite extends EmberQueryTest {

  private lazy val data = DataGen.table(spark, 2000, seed = 11).cache()

  private val projected = Seq(
    // LIKE: Catalyst makes StartsWith / EndsWith / Contains / EqualTo of the simple patterns.
    "s LIKE 's1%'",
    "s LIKE '%0'",
    "s LIKE '%€%'",
    "s LIKE 's_1'",
    "s LIKE 'ä%😀'",
    "s LIKE '%%'",
    "s LIKE '_'",
    "s LIKE 'a!%%' ESCAPE '!'",
    "s NOT LIKE '%1_'",
    "startswith(s, 's')",
    "endswith(s, s)",
    "contains(s, '€')",
    "substring(s, 2)",
    "substring(s, -2, 1)",
    "substr(s, 0, 3)",
    "substring(s, i32, i32)",
    "substring(s, i16, i8)",
    "length(s)",
    "char_length(s)",
    "octet_length(s)",
    "bit_length(s)",
    "year(dt)",
    "month(dt)",
    "day(dt)",
    "dayofmonth(dt)",
    "quarter(dt)",
    "dayofyear(dt)",
    "dayofweek(dt)",
    "weekday(dt)",
    "extract(YEAR FROM dt)",
    "date_part('month', dt)",
    "date_add(dt, i16)",
    "date_sub(dt, i8)",
    "date_add(dt, 30)",
    "datediff(dt, DATE'2000-02-29')",
    "datediff(DATE'1970-01-01', dt)",
    "pmod(i32, 7)",
    "pmod(i64, -3L)",
    "pmod(i8, 5Y)",
    "pmod(i16, 7S)",
    "pmod(f64, 2.5D)",
    "pmod(f32, -1.5F)",
    "pmod(xxhash64(id), 16)",
    "i32 & i8",
    "i64 | 255L",
    "i8 ^ i8",
    "~i16",
    "shiftleft(i32, i8)",
    "shiftright(i64, 65)",
    "shiftrightunsigned(i64, i32)",
    "isnan(f64)",
    "isnan(f32)",
    "nanvl(f64, -1D)",
    "nanvl(f32, f32)",
    "sqrt(f64)",
    "signum(f64)",
    "greatest(i32, i16, 0)",
    "least(i64, id)",
    "greatest(s, 's2')",
    "least(dt, DATE'2000-01-01')",
    "greatest(dec, dec)",
    "ascii(s)",
    "chr(i64)",
    "char(id)",
    "reverse(s)",
    "weekofyear(dt)",
    "last_day(dt)",
    "left(s, 2)",
    "right(s, i8)",
    "nullif(i32, 0)",
    "nvl(s, 'x')",
    "nvl2(s, 1, 2)",
    "ifnull(i64, 0L)",
    "trunc(dt, 'YEAR')",
    "trunc(dt, 'mm')",
    "trunc(dt, 'Quarter')",
    "trunc(dt, 'week')",
    "trunc(dt, s)",
    "abs(f64)",
    "abs(f32)",
    // Every precision: DECIMAL(10,2), (38,10), and DECIMAL(22,6) as in TPC-DS q47.
    "abs(dec)",
    "abs(dec38)",
    "abs(CAST(dec AS DECIMAL(22, 6)))"
  )

  test("functions in a projection and a filter, ANSI on and off") {
    bothAnsiModes { ansi =>
      // Only where Spark answers: these raise under ANSI on the data's zeros / MIN values (checked below).
      val legacyOnly = Seq(
        "pmod(i64, i64)",
        "pmod(f64, f64)",
        "pmod(i32, i8)",
        "abs(i32)",
        "abs(i64)",
        "abs(i8)",
        "abs(i16)"
      )
      val exprs = projected ++ (if (ansi) Nil else legacyOnly)
      checkSparkAnswerAndNative(
        data.selectExpr("id" +: exprs.zipWithIndex.map { case (e, i) => s"$e AS c$i" }: _*),
        Seq(cls[EmberProjectExec])
      )
      checkSparkAnswerAndNative(
        data.where("s LIKE '%1%' AND year(dt) > 1990 AND pmod(id, 3L) = 1 AND substring(s, 1, 1) = 's'"),
        Seq(cls[EmberFilterExec])
      )
    }
  }

  // The data's strings (s0..s49, "", " ", "ä€😀", "NULL", 100 a's) with literals for the case-mapping corners.
  private val stringFunctions = Seq(
    "upper(s)",
    "lower(s)",
    "initcap(s)",
    "upper(concat(s, ' straße ǆ ﬁ ΣΑΣ ᾳ'))",
    "lower(concat('ΑΣ ', s, ' İ ΌΣΟΣ Σ'))",
    "initcap(concat('hello wORLD ß', s, ' ǆx σΣ ΑΣ İi ა'))",
    "trim(s)",
    "ltrim(s)",
    "rtrim(s)",
    "trim(BOTH 's' FROM s)",
    "trim(LEADING 'as' FROM s)",
    "trim(TRAILING '😀€' FROM s)",
    "btrim(s, 's1')",
    "btrim(s)",
    "lpad(s, 5, 'ab')",
    "rpad(s, i8, '€')",
    "lpad(s, 3)",
    "rpad(s, 7, s)",
    "replace(s, '1', 'xy')",
    "replace(s, 's')",
    "replace(s, '', 'z')",
    "translate(s, 's1ä', 'Xy')",
    "instr(s, '1')",
    "locate('1', s)",
    "locate('a', s, i8)",
    "position('€' IN s)",
    "concat(s, '-', s)",
    "s || 'x'",
    "concat_ws('|', s, 'x', s)",
    "concat_ws(s, 'a', 'b')",
    "repeat(s, 3)",
    "repeat(s, i8 % 4)",
    "levenshtein(s, 's10')",
    "levenshtein(s, 'ab', 3)",
    "soundex(s)",
    "soundex(concat('Rob', s))",
    "substring_index(s, '1', 1)",
    "substring_index(s, 's', -1)",
    "substring_index(s, 'a', i8)"
  )

  test("string functions, ANSI on and off") {
    bothAnsiModes { _ =>
      checkSparkAnswerAndNative(
        data.selectExpr("id" +: stringFunctions.zipWithIndex.map { case (e, i) => s"$e AS c$i" }: _*),
        Seq(cls[EmberProjectExec])
      )
      checkSparkAnswerAndNative(
        data.where(
          "upper(s) LIKE 'S1%' AND trim(s) <> '' AND locate('1', s) > 0 AND length(lpad(s, 4, '0')) = 4"
        ),
        Seq(cls[EmberFilterExec])
      )
    }
  }

  test("upper with the JVM's case mappings (ICU off) falls back") {
    withSQLConf("spark.sql.icu.caseMappings.enabled" -> "false") {
      val query = () => data.selectExpr("upper(s) AS u")
      val sparkRows = withEmber(enabled = false)(query().collect().toSeq)
      withEmber(enabled = true) {
        assert(query().collect().toSeq == sparkRows)
        assert(nativeNodes(query()).isEmpty)
      }
    }
  }

  private val math = Seq(
    "cbrt(f64)",
    "exp(f64 / 100)",
    "expm1(f64 / 100)",
    "ln(f64)",
    "log(f64)",
    "log2(f64)",
    "log10(f64)",
    "log(2.0, f64)",
    "log(f64, 100D)",
    "asin(f64 / 2000)",
    "acos(f64 / 2000)",
    "atan(f64)",
    "sinh(f64 / 100)",
    "cosh(f64 / 100)",
    "tanh(f64 / 100)",
    "asinh(f64)",
    "acosh(f64)",
    "degrees(f64)",
    "radians(f32)",
    "rint(f64)",
    "atan2(f64, f32)",
    "pow(f64, 2)",
    "power(f32, f64 / 1000)",
    "hypot(f64, f32)",
    "floor(f64)",
    "ceil(f32)",
    "floor(i64)",
    "ceil(i32)",
    "round(i64)",
    "factorial(i8)",
    "nullifzero(i32)",
    "zeroifnull(i64)",
    "floor(dec)",
    "ceil(dec38)",
    "round(dec, 1)",
    "bround(dec, -2)",
    "round(dec38, 3)",
    "bround(dec38, -5)",
    "width_bucket(f64, -1000D, 1000D, 10L)",
    "width_bucket(f64, 500D, -500D, i64)",
    "hex(i64)",
    "hex(s)",
    "hex(bin)",
    "unhex(s)",
    "unhex(hex(s))",
    "bin(i64)"
  ) ++ (if (Runtime.version().feature() >= 19) {
          Seq("round(f64, 2)", "bround(f64, 1)", "round(f64 * 1e6, -3)", "round(f32, 1)", "bround(f32)")
        } else Nil)

  test("math functions, ANSI on and off") {
    bothAnsiModes { ansi =>
      // Integral rounding overflows on the data's MIN/MAX values: ARITHMETIC_OVERFLOW under ANSI (checked below).
      val legacyOnly =
        Seq("round(i8, -1)", "bround(i64, -2)", "round(i32, -9)", "round(i32, -1)", "bround(i16, -2)")
      val exprs = math ++ (if (ansi) Nil else legacyOnly)
      checkSparkAnswerAndNative(
        data.selectExpr("id" +: exprs.zipWithIndex.map { case (e, i) => s"$e AS c$i" }: _*),
        Seq(cls[EmberProjectExec])
      )
      checkSparkAnswerAndNative(
        data.where(
          "floor(f64) > 0 AND ln(f64) < 5 AND round(i32) <> 0 AND width_bucket(f64, 0D, 1D, 3L) > 2"
        ),
        Seq(cls[EmberFilterExec])
      )
    }
  }

  test("format_number of integers and decimals: Java's DecimalFormat, HALF_EVEN, groups, -0.00") {
    val exprs = Seq(
      "i8",
      "i16",
      "i32",
      "i64",
      "dec",
      "dec38",
      "cast(i16 as decimal(10, 4)) / 10000",
      "cast(-(i8 % 3) as decimal(5, 0)) / 1000"
    )
      .flatMap(x => Seq(0, 1, 2, 5, 30).map(d => s"format_number($x, $d)")) ++
      Seq("format_number(i64, cast(null as int))", "format_number(dec, -1)")
    bothAnsiModes { _ =>
      val df = checkSparkAnswerAndNative(
        data.selectExpr("id" +: exprs.zipWithIndex.map { case (e, i) => s"$e AS c$i" }: _*),
        Seq(cls[EmberProjectExec])
      )
      assert(!executedNodes(df).exists(_.isInstanceOf[org.apache.spark.sql.execution.ProjectExec]))
    }
  }

  test("integral round overflow: ARITHMETIC_OVERFLOW under ANSI") {
    withSQLConf("spark.sql.ansi.enabled" -> "true") {
      checkSparkErrorAndNative(data.selectExpr("round(i8, -1) AS r"), Seq(cls[EmberProjectExec]))
    }
  }

  test(
    "sin/cos/tan (Math's intrinsics) and round of a double before JDK 19 fall back with the reason"
  ) {
    val exprs =
      Seq("sin(f64)", "tan(f64)") ++ (if (Runtime.version().feature() < 19) Seq("round(f64, 2)") else Nil)
    exprs.foreach { e =>
      val query = () => data.selectExpr("id", s"$e AS r")
      checkSparkAnswerAndNative(query(), Nil)
      withEmber(enabled = true) {
        val reasons = EmberExplainInfo.fallbackLines(query().queryExecution.executedPlan)
        assert(
          reasons
            .map(_.toLowerCase(java.util.Locale.ROOT))
            .exists(r => r.contains("sin") || r.contains("tan") || r.contains("round")),
          s"$e: $reasons"
        )
      }
    }
  }

  test("pmod by zero: REMAINDER_BY_ZERO under ANSI, NULL otherwise") {
    withSQLConf("spark.sql.ansi.enabled" -> "true") {
      checkSparkErrorAndNative(data.selectExpr("pmod(i64, 0L) AS r"), Seq(cls[EmberProjectExec]))
    }
    withSQLConf("spark.sql.ansi.enabled" -> "false") {
      checkSparkAnswerAndNative(data.selectExpr("id", "pmod(i32, 0) AS r"), Seq(cls[EmberProjectExec]))
    }
  }

  test("nanvl evaluates its second argument only where the first is NaN (ANSI division by zero elsewhere)") {
    bothAnsiModes { _ =>
      // f64 - f64 is 0 on every finite row: Spark never divides there; NaN and ±Infinity rows divide by NaN.
      checkSparkAnswerAndNative(
        data.selectExpr("id", "nanvl(f64, 1D / (f64 - f64)) AS r", "nanvl(f32, f32 / (f32 - f32)) AS r32"),
        Seq(cls[EmberProjectExec])
      )
    }
  }

  test("abs of MIN: ARITHMETIC_OVERFLOW under ANSI") {
    withSQLConf("spark.sql.ansi.enabled" -> "true") {
      checkSparkErrorAndNative(data.selectExpr("abs(i64) AS r"), Seq(cls[EmberProjectExec]))
    }
  }

  // Digests of binaries and (through Spark's cast to binary) strings, base64 decoding, bits, day and month names,
  // string building and searching. The data's strings all decode as base64 (MIME: "ä€😀" decodes to nothing).
  private val bytesAndBits = Seq(
    "md5(bin)",
    "md5(s)",
    "sha1(bin)",
    "sha(s)",
    "sha2(bin, 0)",
    "sha2(s, 224)",
    "sha2(bin, 256)",
    "sha2(s, 384)",
    "sha2(bin, 512)",
    "sha2(s, 1)",
    "sha2(bin, i32)",
    "crc32(bin)",
    "crc32(s)",
    "unbase64(s)",
    "unbase64(concat('QUJD', s))",
    "bit_count(i64)",
    "bit_count(i32)",
    "bit_count(i8)",
    "bit_count(b)",
    "bit_get(i64, 63)",
    "getbit(i8, 7)",
    "bit_get(i16, 0)",
    "date_from_unix_date(i32 % 100000)",
    "unix_date(dt)",
    "dayname(dt)",
    "monthname(dt)",
    "space(i8 % 8)",
    "elt(2, s, 'x')",
    "elt(1, s)",
    "find_in_set(s, 's1,s2,,ä€😀')",
    "find_in_set('s3', s)",
    "overlay(s PLACING 'ab' FROM 2)",
    "overlay(s PLACING s FROM i8 FOR i8)",
    "overlay(s PLACING '€' FROM -1 FOR 0)"
  )

  test("digests, base64, bits, names, elt / find_in_set / overlay, ANSI on and off") {
    bothAnsiModes { ansi =>
      // elt with an index out of 1..2 raises INVALID_ARRAY_INDEX under ANSI (checked below).
      val exprs = bytesAndBits ++ (if (ansi) Nil else Seq("elt(i8 % 4, s, 'x')", "elt(i32, 'a', s)"))
      checkSparkAnswerAndNative(
        data.selectExpr("id" +: exprs.zipWithIndex.map { case (e, i) => s"$e AS c$i" }: _*),
        Seq(cls[EmberProjectExec])
      )
      checkSparkAnswerAndNative(
        data.where("md5(s) > '8' AND bit_get(i32, 0) = 1 AND dayname(dt) <> 'Sun' AND crc32(bin) > 1000"),
        Seq(cls[EmberFilterExec])
      )
    }
  }

  test("elt out of bounds under ANSI: INVALID_ARRAY_INDEX; bit_get out of range: BIT_POSITION_RANGE") {
    withSQLConf("spark.sql.ansi.enabled" -> "true") {
      checkSparkErrorAndNative(data.selectExpr("elt(i8 % 4, s, 'x') AS r"), Seq(cls[EmberProjectExec]))
    }
    for (ansi <- Seq("true", "false")) {
      withSQLConf("spark.sql.ansi.enabled" -> ansi) {
        checkSparkErrorAndNative(data.selectExpr("getbit(i64, i8) AS r"), Seq(cls[EmberProjectExec]))
      }
    }
  }

  test("elt over other expressions falls back (Spark evaluates only the chosen one)") {
    val query = () => data.selectExpr("id", "elt(1, s, upper(s)) AS r")
    checkSparkAnswerAndNative(query(), Nil)
    withEmber(enabled = true) {
      val reasons = EmberExplainInfo.fallbackLines(query().queryExecution.executedPlan)
      assert(reasons.exists(_.contains("elt")), reasons)
    }
  }

  test("e() and pi() unfolded (ConstantFolding excluded)") {
    withSQLConf(
      "spark.sql.optimizer.excludedRules" -> "org.apache.spark.sql.catalyst.optimizer.ConstantFolding"
    ) {
      checkSparkAnswerAndNative(
        data.selectExpr("id", "e() AS e", "pi() AS p", "f64 * pi() AS x"),
        Seq(cls[EmberProjectExec])
      )
    }
  }

  // log1p / atanh (fdlibm's s_log1p.c, as StrictMath), base64 and luhn_check (the StaticInvokes Spark rewrites
  // them to), conv. The data's "a" * 100 overflows conv from base 16 or 36: only without ANSI here (checked
  // below).
  private val logsEncodingsConv = Seq(
    "log1p(f64)",
    "log1p(f64 / 1000)",
    "log1p(f32)",
    "atanh(f64 / 1000)",
    "atanh(f64)",
    "base64(bin)",
    "base64(s)",
    "base64(concat(s, s, s))",
    "luhn_check(s)",
    "luhn_check(CAST(i64 AS STRING))",
    "luhn_check(CAST(i16 AS STRING))",
    "conv(s, 10, -16)",
    "conv(s, 2, 10)",
    "conv(CAST(i64 AS STRING), 10, 2)",
    "conv(CAST(i64 AS STRING), 10, -36)",
    "conv(hex(i64), 16, -10)",
    "conv(CAST(i32 AS STRING), i8, 10)"
  )

  test("log1p, atanh, base64, luhn_check, conv, ANSI on and off") {
    bothAnsiModes { ansi =>
      val exprs =
        logsEncodingsConv ++ (if (ansi) Nil else Seq("conv(s, 36, 10)", "conv(s, 36, -2)", "conv(s, 16, 10)"))
      checkSparkAnswerAndNative(
        data.selectExpr("id" +: exprs.zipWithIndex.map { case (e, i) => s"$e AS c$i" }: _*),
        Seq(cls[EmberProjectExec])
      )
      checkSparkAnswerAndNative(
        data.where("log1p(f64) > 1 AND base64(bin) <> '' AND NOT luhn_check(s) AND conv(s, 10, 16) <> '1'"),
        Seq(cls[EmberFilterExec])
      )
    }
  }

  test("base64 unchunked (spark.sql.chunkBase64String.enabled=false)") {
    withSQLConf("spark.sql.chunkBase64String.enabled" -> "false") {
      checkSparkAnswerAndNative(
        data.selectExpr("id", "base64(concat(s, s, s)) AS a", "base64(bin) AS b"),
        Seq(cls[EmberProjectExec])
      )
    }
  }

  test("conv overflow under ANSI: ARITHMETIC_OVERFLOW") {
    withSQLConf("spark.sql.ansi.enabled" -> "true") {
      checkSparkErrorAndNative(data.selectExpr("conv(s, 36, 10) AS r"), Seq(cls[EmberProjectExec]))
    }
  }

  // The StaticInvokes / Invokes Spark rewrites the URL codec, quote and UTF-8 functions to.
  private val urlQuoteUtf8 = Seq(
    "url_encode(s)",
    "url_encode(concat(s, ' +/%'))",
    "url_decode(s)",
    "url_decode(url_encode(s))",
    "url_decode(concat(s, '+%41%e2%82%ac%ED%A0%80'))",
    "try_url_decode(concat(s, '%4'))",
    "try_url_decode(s)",
    "quote(s)",
    "quote(concat('''', s, '\\\\'))",
    "is_valid_utf8(s)",
    "make_valid_utf8(s)",
    "validate_utf8(s)",
    "try_validate_utf8(s)"
  )

  test("url_encode / url_decode / try_url_decode, quote, UTF-8 checks, ANSI on and off") {
    bothAnsiModes { _ =>
      checkSparkAnswerAndNative(
        data.selectExpr("id" +: urlQuoteUtf8.zipWithIndex.map { case (e, i) => s"$e AS c$i" }: _*),
        Seq(cls[EmberProjectExec])
      )
      checkSparkAnswerAndNative(
        data.where("url_encode(s) <> s AND is_valid_utf8(s) AND quote(s) > '''s1'"),
        Seq(cls[EmberFilterExec])
      )
    }
  }

  test("url_decode of a malformed escape: CANNOT_DECODE_URL in every mode") {
    for (ansi <- Seq("true", "false")) {
      withSQLConf("spark.sql.ansi.enabled" -> ansi) {
        checkSparkErrorAndNative(
          data.selectExpr("url_decode(concat(s, '%zz')) AS r"),
          Seq(cls[EmberProjectExec])
        )
      }
    }
  }

  test(
    "encode / decode with UTF-8, ISO-8859-1, US-ASCII; MALFORMED_CHARACTER_CODING; other charsets fall back"
  ) {
    bothAnsiModes { _ =>
      checkSparkAnswerAndNative(
        data
          .selectExpr(
            "id",
            "encode(s, 'utf-8') AS a",
            "encode(s, 'UTF-8') AS b",
            "decode(encode(s, 'UTF-8'), 'utf-8') AS c",
            "decode(bin, 'ISO-8859-1') AS d",
            "encode(decode(bin, 'iso-8859-1'), 'ISO-8859-1') AS e",
            "decode(encode(substr(s, 1, 1), 'iso-8859-1'), 'iso-8859-1') AS f"
          ),
        Seq(cls[EmberProjectExec])
      )
    }
    for (ansi <- Seq("true", "false")) {
      withSQLConf("spark.sql.ansi.enabled" -> ansi) {
        checkSparkErrorAndNative(data.selectExpr("encode(s, 'US-ASCII') AS r"), Seq(cls[EmberProjectExec]))
        checkSparkErrorAndNative(data.selectExpr("decode(bin, 'UTF-8') AS r"), Seq(cls[EmberProjectExec]))
      }
    }
    val query = () => data.selectExpr("id", "encode(s, 'UTF-16') AS r")
    checkSparkAnswerAndNative(query(), Nil)
    withEmber(enabled = true) {
      val reasons = EmberExplainInfo.fallbackLines(query().queryExecution.executedPlan)
      assert(reasons.exists(_.contains("UTF-16")), reasons)
    }
  }

  test("a LIKE pattern Spark rejects falls back and Spark raises its error") {
    val query = () => data.selectExpr("s LIKE 'a\\\\b' AS r")
    val sparkError = withEmber(enabled = false)(intercept[Throwable](query().collect()))
    val emberError = withEmber(enabled = true)(intercept[Throwable](query().collect()))
    assert(emberError.getMessage == sparkError.getMessage)
    withEmber(enabled = true)(assert(nativeNodes(query()).isEmpty))
  }

  // Timestamps around DST transitions: LA's gap (2024-03-10 10:00Z) and overlap (2024-11-03 09:00Z), Berlin's
  // gap (2024-03-31 01:00Z), Lord Howe's 30-minute gap (2024-10-05 15:30Z): rows 97 s apart.
  private val dstWindows =
    Seq(1710064800L, 1730624400L, 1711846800L, 1728142200L).map(t =>
      s"timestamp_seconds(${t - 86400}L + id * 97)"
    )

  private val zoned = Seq(
    "hour(ts)",
    "minute(ts)",
    "second(ts)",
    "year(ts)",
    "month(ts)",
    "dayofweek(ts)",
    "weekofyear(ts)",
    "to_date(ts)",
    "CAST(ts AS STRING)",
    "CAST(dt AS TIMESTAMP)",
    "CAST(ts AS TIMESTAMP_NTZ)",
    "CAST(ntz AS TIMESTAMP)",
    "date_trunc('MINUTE', ts)",
    "date_trunc('HOUR', ts)",
    "date_trunc('DD', ts)",
    "date_trunc('WEEK', ts)",
    "date_trunc('MM', ts)",
    "date_trunc('QUARTER', ts)",
    "date_trunc('YEAR', ts)",
    "date_trunc('SECOND', ts)",
    "from_utc_timestamp(ts, 'Europe/Berlin')",
    "to_utc_timestamp(ts, 'America/Los_Angeles')",
    "to_utc_timestamp(ts, 'Australia/Lord_Howe')",
    "unix_seconds(ts)",
    "unix_millis(ts)",
    "unix_micros(ts)",
    "unix_timestamp(ts)",
    "unix_timestamp(dt)",
    "to_unix_timestamp(ntz)",
    "timestamp_seconds(i32)",
    "timestamp_millis(i32)",
    "timestamp_micros(i32)",
    "add_months(dt, i16)",
    "months_between(ts, dt)",
    "months_between(ts, TIMESTAMP'2000-02-29 12:00:00', false)",
    "next_day(dt, 'MON')",
    "next_day(dt, 'sunday')",
    "make_date(year(dt), month(dt), 28)"
  ) ++ dstWindows.flatMap(w =>
    Seq(
      s"hour($w)",
      s"minute($w)",
      s"to_date($w)",
      s"CAST($w AS STRING)",
      s"date_trunc('HOUR', $w)",
      s"date_trunc('MINUTE', $w)",
      s"date_trunc('DAY', $w)",
      s"to_utc_timestamp(CAST($w AS TIMESTAMP_NTZ), 'Europe/Berlin')",
      s"CAST(CAST($w AS TIMESTAMP_NTZ) AS TIMESTAMP)",
      s"months_between($w, TIMESTAMP'2024-01-31 00:00:00')"
    )
  )

  for (zone <- Seq("America/Los_Angeles", "Europe/Berlin", "Asia/Kolkata", "Australia/Lord_Howe", "UTC")) {
    test(s"timestamps in session time zone $zone, ANSI on and off") {
      withSQLConf("spark.sql.session.timeZone" -> zone) {
        bothAnsiModes { ansi =>
          val legacyOnly = Seq("make_date(i16, i8, i8)", "next_day(dt, s)")
          val exprs = zoned ++ (if (ansi) Nil else legacyOnly)
          checkSparkAnswerAndNative(
            data.selectExpr("id" +: exprs.zipWithIndex.map { case (e, i) => s"$e AS c$i" }: _*),
            Seq(cls[EmberProjectExec])
          )
        }
      }
    }
  }

  test("make_date of an invalid date under ANSI: the same error class") {
    withSQLConf("spark.sql.ansi.enabled" -> "true", "spark.sql.session.timeZone" -> "Europe/Berlin") {
      checkSparkErrorAndNative(data.selectExpr("make_date(i16, i8, i8) AS r"), Seq(cls[EmberProjectExec]))
    }
  }

  test("functions Spark's optimizer makes literals run in a native projection") {
    checkSparkAnswerAndNative(
      data.selectExpr(
        "id",
        "typeof(s)",
        "typeof(dec38)",
        "current_timezone()",
        "current_database()",
        "current_catalog()",
        "current_user()"
      ),
      Seq(cls[EmberProjectExec])
    )
    // The clock's functions differ from run to run: the plan is checked, and the values against the clock.
    withEmber(enabled = true) {
      val before = java.time.Instant.now().minusSeconds(1)
      val df = data.selectExpr("id + 1 AS i", "now() AS t", "current_date() AS d", "localtimestamp() AS l")
      val rows = df.collect()
      assert(nativeNodes(df).exists(_.isInstanceOf[EmberProjectExec]), df.queryExecution.executedPlan)
      assert(rows.forall(r => r.getAs[java.sql.Timestamp]("t").toInstant.isAfter(before)))
    }
  }

  test("empty input") {
    checkSparkAnswerAndNative(
      data
        .where("id < 0")
        .selectExpr(
          "substring(s, 2, 3)",
          "s LIKE '_%'",
          "year(dt)",
          "pmod(i32, 3)",
          "upper(s)",
          "concat_ws(',', s)"
        ),
      Seq(cls[EmberProjectExec])
    )
  }
}
