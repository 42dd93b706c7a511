package org.apache.spark.sql.ember.serde

import org.apache.spark.sql.catalyst.expressions.{Left => _, Right => _, _}
import org.apache.spark.sql.catalyst.expressions.objects.{Invoke, StaticInvoke}
import org.apache.spark.sql.internal.{LegacyBehaviorPolicy, SQLConf}
import org.apache.spark.sql.types._
import org.ember.proto

/**
 * Spark's built-in functions evaluated natively: one registry entry per Catalyst expression class, sent as a
 * generic `ScalarFunction` by name (the engine's registry, `planner/functions.rs`, maps the name to a kernel).
 * The registry is also what `docs/expressions.md` is generated from ([[nativeClasses]]), so the reference
 * cannot disagree with what the converter does. The engine has the last word ([[EngineSupport]]).
 */
object FunctionSerde {

  /**
   * A native function: the name the engine knows, which argument types it takes (`types`, for the docs), the
   * arguments to send or why not (an extra literal where Spark keeps an argument outside `children`). An
   * expression called by one of its `aliases` (its `prettyName`, which Spark's error messages carry) is sent
   * under that name.
   */
  final case class Fn(
      name: String,
      types: String,
      args: Expression => Either[String, Seq[Expression]],
      mode: Expression => EvalMode.Value = _ => EvalMode.LEGACY,
      aliases: Set[String] = Set.empty
  )

  private def binaryString(dt: DataType): Boolean = dt match {
    case s: StringType => s.isUTF8BinaryCollation
    case _ => false
  }

  /** The arguments when the first `n` are UTF8_BINARY strings (the others are the ints Spark coerced them to). */
  private def strings(n: Int)(e: Expression): Either[String, Seq[Expression]] =
    if (e.children.take(n).forall(c => binaryString(c.dataType))) Right(e.children)
    else {
      val types = e.children.map(_.dataType.simpleString).mkString(", ")
      Left(s"${e.prettyName} over $types (only UTF8_BINARY strings)")
    }

  private def dates(e: Expression): Either[String, Seq[Expression]] =
    if (e.children.head.dataType == DateType) Right(e.children)
    else Left(s"${e.prettyName} of ${e.children.head.dataType.simpleString}")

  private def like(e: Expression): Either[String, Seq[Expression]] = e match {
    case l @ Like(str, pattern: Literal, escape)
        if binaryString(str.dataType) && binaryString(pattern.dataType) =>
      Right(Seq(l.left, pattern, Literal(escape.toString)))
    case Like(_, _: Literal, _) => Left("LIKE over a non-UTF8_BINARY string")
    case _ => Left("LIKE with a non-literal pattern")
  }

  /**
   * `rlike` and `regexp_*`: a UTF8_BINARY subject, a literal pattern and literal numbers (the engine translates
   * the Java pattern, or refuses it with the reason). `regexp_instr`'s index is not used by Spark (only its
   * NULL-ness), so it is sent only when NULL would make every result NULL: then Spark keeps the function.
   */
  private def regexp(e: Expression): Either[String, Seq[Expression]] = {
    val (subject, rest) = (e.children.head, e.children.tail)
    if (!binaryString(subject.dataType) || !binaryString(rest.head.dataType)) {
      Left(s"${e.prettyName} over ${subject.dataType.simpleString} (only UTF8_BINARY strings)")
    } else if (!rest.forall(_.isInstanceOf[Literal])) {
      Left(s"${e.prettyName} with a non-literal pattern, replacement, index or position")
    } else {
      e match {
        case r: RegExpInStr =>
          if (r.idx.asInstanceOf[Literal].value == null) Left("regexp_instr with a NULL index")
          else Right(Seq(r.subject, r.regexp))
        case _ => Right(e.children)
      }
    }
  }

  private def pmod(e: Expression): Either[String, Seq[Expression]] = e.dataType match {
    case ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType => Right(e.children)
    case other => Left(s"pmod of ${other.simpleString}")
  }

  /**
   * `date_format` / `from_unixtime`: a literal pattern (the engine compiles it as Spark builds its formatter, or
   * refuses it), under Spark's default java.time formatter (not `spark.sql.legacy.timeParserPolicy=LEGACY`).
   */
  private def datetimePattern(e: Expression): Either[String, Seq[Expression]] =
    if (SQLConf.get.legacyTimeParserPolicy == LegacyBehaviorPolicy.LEGACY)
      Left(s"${e.prettyName} under the LEGACY time parser policy")
    else if (!e.children(1).isInstanceOf[Literal] || !binaryString(e.children(1).dataType))
      Left(s"${e.prettyName} with a pattern that is not a string literal")
    else Right(e.children)

  /** `split(str, regex, limit)` over UTF8_BINARY strings with a literal pattern (Spark 3+'s empty-regex rule). */
  private def split(e: Expression): Either[String, Seq[Expression]] =
    if (SQLConf.get.getConf(SQLConf.LEGACY_TRUNCATE_FOR_EMPTY_REGEX_SPLIT))
      Left("split under the legacy truncation")
    else if (!binaryString(e.children.head.dataType) || !binaryString(e.children(1).dataType))
      Left("split of collated strings")
    else if (!e.children(1).isInstanceOf[Literal]) Left("split with a non-literal pattern")
    else Right(e.children)

  /** `size` / `cardinality` of an array, with Spark's rule for a NULL array as a literal. */
  private def size(e: Expression): Either[String, Seq[Expression]] = e match {
    case s: Size if s.child.dataType.isInstanceOf[ArrayType] =>
      Right(Seq(s.child, Literal(s.legacySizeOfNull)))
    case _ => Left(s"${e.prettyName} of a map")
  }

  /** `element_at` of an array, without a default for an index out of bounds. */
  private def elementAt(e: Expression): Either[String, Seq[Expression]] = e match {
    case a: ElementAt if a.left.dataType.isInstanceOf[ArrayType] && a.defaultValueOutOfBound.isEmpty =>
      Right(e.children)
    case _ => Left("element_at of a map")
  }

  /** `rand` / `randn`: the seed Spark's `RDG.seed` resolves (the foldable seed as a long, NULL as 0). */
  private def seed(e: Expression): Either[String, Seq[Expression]] = e match {
    case r: RDG if r.seedExpression.foldable => Right(Seq(constantSeed(r.seedExpression)))
    case _ => Left(s"${e.prettyName} with a seed that is not a constant")
  }

  /** `randstr(length, seed)`: both constants (Spark requires it), the length as an int literal. */
  private def randStr(e: Expression): Either[String, Seq[Expression]] = e match {
    case r: RandStr if r.length.foldable && r.seedExpression.foldable =>
      Right(Seq(Literal(r.length.eval(), IntegerType), constantSeed(r.seedExpression)))
    case _ => Left("randstr with a length or seed that is not a constant")
  }

  /** A foldable seed as Spark's `RDG.seed` reads it: an int or long as a long, NULL as 0. */
  private def constantSeed(seed: Expression): Literal = {
    val value = seed.eval() match {
      case i: Int => i.toLong
      case l: Long => l
      case _ => 0L
    }
    Literal(value, LongType)
  }

  /** The arguments as they are; the engine checks their types (its refusal is the fallback reason). */
  private def all(e: Expression): Either[String, Seq[Expression]] = Right(e.children)

  private def extremum(e: Expression): Either[String, Seq[Expression]] = e.dataType match {
    case FloatType | DoubleType =>
      Left(s"${e.prettyName} of ${e.dataType.simpleString} (Spark ties -0.0 with 0.0)")
    case s: StringType if !s.isUTF8BinaryCollation => Left(s"${e.prettyName} of ${s.simpleString}")
    case _ => Right(e.children)
  }

  /** Every argument a UTF8_BINARY string (`concat`, `concat_ws`: not their binary / array forms). */
  private def allStrings(e: Expression): Either[String, Seq[Expression]] =
    if (e.children.nonEmpty && binaryString(e.dataType)) strings(e.children.size)(e)
    else Left(s"${e.prettyName} of ${e.dataType.simpleString}")

  /** Default JVM locales whose ICU case rules differ from the root locale's, which the engine implements. */
  private val caseLocales = Set("tr", "az", "lt", "el", "hy", "nl")

  /**
   * `upper` / `lower` / `initcap` follow ICU's case mappings (`spark.sql.icu.caseMappings.enabled`, default
   * true) in the JVM's default locale: natively only with ICU and a locale without its own case rules.
   */
  private def caseMapping(e: Expression): Either[String, Seq[Expression]] = {
    val language = java.util.Locale.getDefault.getLanguage
    if (!SQLConf.get.getConf(SQLConf.ICU_CASE_MAPPINGS_ENABLED)) {
      Left(s"${e.prettyName} with spark.sql.icu.caseMappings.enabled=false (the JVM's case mappings)")
    } else if (caseLocales.contains(language)) {
      Left(s"${e.prettyName} in the default locale '$language' (ICU case rules of its own)")
    } else strings(1)(e)
  }

  /** A threshold only as a non-null literal: Spark reads a NULL one as 0 interpreted and as -1 compiled. */
  private def levenshtein(e: Expression): Either[String, Seq[Expression]] = e match {
    case Levenshtein(_, _, None) => strings(2)(e)
    case Levenshtein(_, _, Some(Literal(v, IntegerType))) if v != null => strings(2)(e)
    case _ => Left("levenshtein with a threshold other than a non-null literal")
  }

  /** `unix_timestamp(t, fmt)` of a timestamp or date: the format is not used, only `t` is sent. */
  private def unixTimestamp(e: Expression): Either[String, Seq[Expression]] = e.children.head.dataType match {
    case TimestampType | TimestampNTZType | DateType => Right(Seq(e.children.head))
    case other => Left(s"${e.prettyName} of ${other.simpleString} (datetime patterns)")
  }

  private def failOnError(e: Expression): EvalMode.Value = {
    val fail = e match {
      case n: NextDay => n.failOnError
      case m: MakeDate => m.failOnError
      case l: Elt => l.failOnError
      case c: Conv => c.ansiEnabled
      case a: ElementAt => a.failOnError
      case a: GetArrayItem => a.failOnError
      case _ => false
    }
    if (fail) EvalMode.ANSI else EvalMode.LEGACY
  }

  /**
   * `round` / `bround`: the scale is foldable (Spark checks it), sent as an INT literal. Whether a float or double
   * rounds natively on this JVM (Spark rounds through `Double.toString`'s digits, which JDK 19 changed) is the
   * engine's call, made from the plan's `jdk_feature`.
   */
  private def round(e: Expression): Either[String, Seq[Expression]] = e match {
    case r: RoundBase if r.right.foldable => Right(Seq(r.left, Literal(r.right.eval(), IntegerType)))
    case r: RoundBase => Left(s"${e.prettyName} with a non-foldable scale")
    case _ => Left(s"${e.prettyName} is not a rounding expression")
  }

  private def roundMode(e: Expression): EvalMode.Value = e match {
    case Round(_, _, true) | BRound(_, _, true) => EvalMode.ANSI
    case _ => EvalMode.LEGACY
  }

  private val double = "double"

  private val stringTypes = "string (UTF8_BINARY)"
  private val ints = "tinyint/smallint/int/bigint"

  /**
   * DOUBLE functions of `java.lang.StrictMath` / `Math` the engine reproduces bit for bit (golden-checked).
   * `sin`, `cos`, `tan`, `cot` are not here: `Math`'s JIT intrinsics compute them, not fdlibm.
   */
  private val transcendental: Map[Class[_], Fn] = Map(
    classOf[Cbrt] -> Fn("cbrt", double, all),
    classOf[Exp] -> Fn("exp", double, all),
    classOf[Expm1] -> Fn("expm1", double, all),
    classOf[Log] -> Fn("ln", "double (NULL at or below 0)", all),
    classOf[Log2] -> Fn("log2", "double (NULL at or below 0)", all),
    classOf[Log10] -> Fn("log10", "double (NULL at or below 0)", all),
    classOf[Log1p] -> Fn("log1p", "double (NULL at or below -1)", all),
    classOf[Asin] -> Fn("asin", double, all),
    classOf[Acos] -> Fn("acos", double, all),
    classOf[Atan] -> Fn("atan", double, all),
    classOf[Sinh] -> Fn("sinh", double, all),
    classOf[Cosh] -> Fn("cosh", double, all),
    classOf[Tanh] -> Fn("tanh", double, all),
    classOf[Asinh] -> Fn("asinh", double, all),
    classOf[Acosh] -> Fn("acosh", double, all),
    classOf[Atanh] -> Fn("atanh", double, all),
    classOf[ToDegrees] -> Fn("degrees", double, all),
    classOf[ToRadians] -> Fn("radians", double, all),
    classOf[Rint] -> Fn("rint", double, all),
    classOf[Atan2] -> Fn("atan2", "double, double", all),
    classOf[Pow] -> Fn("power", "double, double", all),
    classOf[Hypot] -> Fn("hypot", "double, double", all),
    classOf[Logarithm] -> Fn("log", "double, double (NULL when either is at most 0)", all)
  )

  private def unhex(e: Expression): Either[String, Seq[Expression]] = e match {
    case u: Unhex if !u.failOnError => Right(e.children)
    case _ => Left("unhex raising errors (to_binary's hex format)")
  }

  private def unbase64(e: Expression): Either[String, Seq[Expression]] = e match {
    case u: UnBase64 if !u.failOnError => strings(1)(e)
    case _ => Left("unbase64 raising errors (to_binary's base64 format)")
  }

  /**
   * `elt` of UTF8_BINARY strings that are columns or literals: Spark evaluates only the chosen one, the engine
   * every argument, so only arguments that cannot fail are sent.
   */
  private def elt(e: Expression): Either[String, Seq[Expression]] =
    if (!binaryString(e.dataType)) Left(s"elt of ${e.dataType.simpleString}")
    else if (!e.children.tail.forall(c => c.isInstanceOf[Attribute] || c.isInstanceOf[Literal])) {
      Left("elt over expressions other than columns and literals (Spark evaluates only the chosen one)")
    } else Right(e.children)

  /** Digests, encodings and bits (golden-checked; strings reach the digests through Spark's cast to binary). */
  private val bytesAndBits: Map[Class[_], Fn] = Map(
    classOf[Md5] -> Fn("md5", "binary", all),
    classOf[Sha1] -> Fn("sha1", "binary", all),
    classOf[Sha2] -> Fn("sha2", "binary, int", all),
    classOf[Crc32] -> Fn("crc32", "binary", all),
    classOf[UnBase64] -> Fn("unbase64", stringTypes, unbase64),
    classOf[BitwiseCount] -> Fn("bit_count", s"boolean/$ints", all),
    classOf[BitwiseGet] -> Fn("bit_get", s"$ints, int", all, aliases = Set("getbit")),
    classOf[DateFromUnixDate] -> Fn("date_from_unix_date", "int", all),
    classOf[UnixDate] -> Fn("unix_date", "date", dates),
    classOf[DayName] -> Fn("dayname", "date", dates),
    classOf[MonthName] -> Fn("monthname", "date", dates),
    classOf[EulerNumber] -> Fn("e", "no arguments (Spark folds it unless ConstantFolding is excluded)", all),
    classOf[Pi] -> Fn("pi", "no arguments (Spark folds it unless ConstantFolding is excluded)", all),
    classOf[StringSpace] -> Fn("space", "int", all),
    classOf[Elt] -> Fn("elt", s"int, $stringTypes columns or literals", elt, failOnError),
    classOf[FindInSet] -> Fn("find_in_set", stringTypes, strings(2)),
    classOf[Overlay] -> Fn("overlay", s"$stringTypes, string, int, int", strings(2)),
    classOf[Conv] -> Fn("conv", s"$stringTypes, int, int", strings(1), failOnError)
  )

  /** `base64(bin)` as Spark rewrites it: `Base64.encode(bin, chunkBase64)`, the flag a boolean literal. */
  private def base64(e: Expression): Either[String, Seq[Expression]] = e.children match {
    case Seq(bin, flag @ Literal(_: java.lang.Boolean, BooleanType))
        if bin.dataType == BinaryType && binaryString(e.dataType) =>
      Right(Seq(bin, flag))
    case _ =>
      Left(
        s"base64 as ${e.dataType.simpleString} of ${e.children.map(_.dataType.simpleString).mkString(", ")}"
      )
  }

  /** `url_decode(str)` as Spark rewrites it: `UrlCodec.decode(str, failOnError)`, the flag a boolean literal. */
  private def urlDecode(e: Expression): Either[String, Seq[Expression]] = e.children match {
    case Seq(str, flag @ Literal(_: java.lang.Boolean, BooleanType)) if binaryString(str.dataType) =>
      Right(Seq(str, flag))
    case _ => Left(s"url_decode of ${e.children.map(_.dataType.simpleString).mkString(", ")}")
  }

  /**
   * `encode(str, charset)` / `decode(bin, charset)` as Spark rewrites them: `(str | bin, charset, legacyCharsets,
   * legacyErrorAction)`, the last three literals; which charsets and error action run natively is the engine's
   * call.
   */
  private def charsetCoding(name: String, input: DataType => Boolean)(
      e: Expression
  ): Either[String, Seq[Expression]] =
    e.children match {
      case Seq(x, cs @ Literal(_, _: StringType), a @ Literal(_, BooleanType), b @ Literal(_, BooleanType))
          if input(x.dataType) && (e.dataType == BinaryType || binaryString(e.dataType)) =>
        Right(Seq(x, cs, a, b))
      case Seq(_, Literal(_, _: StringType), _, _) =>
        Left(s"$name of ${e.children.head.dataType.simpleString} as ${e.dataType.simpleString}")
      case _ => Left(s"$name with a charset that is not a literal")
    }

  /** One UTF8_BINARY string argument of a rewritten function (`name` for the reason). */
  private def oneString(name: String)(e: Expression): Either[String, Seq[Expression]] =
    if (e.children.size == 1 && binaryString(e.children.head.dataType)) Right(e.children)
    else
      Left(s"$name of ${e.children.map(_.dataType.simpleString).mkString(", ")} (only UTF8_BINARY strings)")

  private def via(method: String) = s"Spark's StaticInvoke of $method"

  /**
   * Functions Spark rewrites (`RuntimeReplaceable`) into a `StaticInvoke` of a Java method, keyed by the
   * method's class and name; the value's first element is the rewritten functions' classes, for the docs.
   */
  private val staticInvokes: Map[(Class[_], String), (Seq[Class[_]], Fn)] = Map(
    (classOf[Base64], "encode") -> (Seq(classOf[Base64]) -> Fn(
      "base64",
      s"binary (${via("Base64.encode")}, either spark.sql.chunkBase64String.enabled)",
      base64
    )),
    (classOf[ExpressionImplUtils], "isLuhnNumber") -> (Seq(classOf[Luhncheck]) -> Fn(
      "luhn_check",
      s"$stringTypes (${via("ExpressionImplUtils.isLuhnNumber")})",
      oneString("luhn_check")
    )),
    (UrlCodec.getClass, "encode") -> (Seq(classOf[UrlEncode]) -> Fn(
      "url_encode",
      s"$stringTypes (${via("UrlCodec.encode")})",
      oneString("url_encode")
    )),
    (UrlCodec.getClass, "decode") -> (Seq(classOf[UrlDecode], classOf[TryUrlDecode]) -> Fn(
      "url_decode",
      s"$stringTypes (${via("UrlCodec.decode")})",
      urlDecode
    )),
    (classOf[Encode], "encode") -> (Seq(classOf[Encode]) -> Fn(
      "encode",
      s"$stringTypes, literal charset UTF-8/ISO-8859-1/US-ASCII, not spark.sql.legacy.codingErrorAction " +
        s"(${via("Encode.encode")})",
      charsetCoding("encode", binaryString)
    )),
    (classOf[StringDecode], "decode") -> (Seq(classOf[Decode], classOf[StringDecode]) -> Fn(
      "decode",
      "binary, literal charset UTF-8/ISO-8859-1/US-ASCII, not spark.sql.legacy.codingErrorAction " +
        s"(${via("StringDecode.decode")}; with more arguments Spark rewrites it to CASE WHEN)",
      charsetCoding("decode", _ == BinaryType)
    )),
    (classOf[ExpressionImplUtils], "quote") -> (Seq(classOf[Quote]) -> Fn(
      "quote",
      s"$stringTypes (${via("ExpressionImplUtils.quote")})",
      oneString("quote")
    )),
    (classOf[ExpressionImplUtils], "validateUTF8String") -> (Seq(classOf[ValidateUTF8]) -> Fn(
      "validate_utf8",
      s"$stringTypes (${via("ExpressionImplUtils.validateUTF8String")}; strings are valid UTF-8 in Ember)",
      oneString("validate_utf8")
    )),
    (classOf[ExpressionImplUtils], "tryValidateUTF8String") -> (Seq(classOf[TryValidateUTF8]) -> Fn(
      "try_validate_utf8",
      s"$stringTypes (${via("ExpressionImplUtils.tryValidateUTF8String")}; strings are valid UTF-8 in Ember)",
      oneString("try_validate_utf8")
    ))
  )

  /** Functions Spark rewrites into an `Invoke` of a `UTF8String` method without arguments, by method name. */
  private val stringInvokes: Map[String, (Seq[Class[_]], Fn)] = Map(
    "isValid" -> (Seq(classOf[IsValidUTF8]) -> Fn(
      "is_valid_utf8",
      s"$stringTypes (Spark's Invoke of UTF8String.isValid; strings are valid UTF-8 in Ember)",
      oneString("is_valid_utf8")
    )),
    "makeValid" -> (Seq(classOf[MakeValidUTF8]) -> Fn(
      "make_valid_utf8",
      s"$stringTypes (Spark's Invoke of UTF8String.makeValid; strings are valid UTF-8 in Ember)",
      oneString("make_valid_utf8")
    ))
  )

  /** The function a `StaticInvoke` / `Invoke` of one of [[staticInvokes]] / [[stringInvokes]] computes. */
  private def invoked(e: Expression): Option[Fn] = e match {
    case s: StaticInvoke => staticInvokes.get((s.staticObject, s.functionName)).map(_._2)
    case i: Invoke if i.arguments.isEmpty && i.targetObject.dataType.isInstanceOf[StringType] =>
      stringInvokes.get(i.functionName).map(_._2)
    case _ => None
  }

  /** Class names of the rewritten functions whose `(Static)Invoke` this converter sends (docs/expressions.md). */
  def nativeRewrites: Map[String, Fn] =
    (staticInvokes.values ++ stringInvokes.values).flatMap { case (cs, f) => cs.map(_.getName -> f) }.toMap

  private val rounding: Map[Class[_], Fn] = Map(
    classOf[Floor] -> Fn("floor", "double/bigint/decimal", all),
    classOf[Ceil] -> Fn("ceil", "double/bigint/decimal", all),
    classOf[Round] -> Fn(
      "round",
      "integers, decimal, float/double (JDK 19+), literal scale",
      round,
      roundMode
    ),
    classOf[BRound] -> Fn(
      "bround",
      "integers, decimal, float/double (JDK 19+), literal scale",
      round,
      roundMode
    ),
    classOf[Factorial] -> Fn("factorial", "int", all),
    classOf[FormatNumber] -> Fn(
      "format_number",
      "integers/decimal, literal int decimals",
      e =>
        e.children(1) match {
          case Literal(_, IntegerType) => Right(e.children)
          case _ => Left("format_number with a pattern or non-literal decimals")
        }
    ),
    // Nondeterministic: native in a projection, where Spark evaluates them on every row (docs/compatibility.md).
    classOf[SparkPartitionID] -> Fn("spark_partition_id", "none (in a projection)", all),
    classOf[MonotonicallyIncreasingID] -> Fn("monotonically_increasing_id", "none (in a projection)", all),
    classOf[Rand] -> Fn("rand", "literal seed (in a projection)", seed, aliases = Set("random")),
    classOf[Randn] -> Fn("randn", "literal seed (in a projection)", seed),
    classOf[RandStr] -> Fn("randstr", "literal length and seed (in a projection)", randStr),
    classOf[Uuid] -> Fn(
      "uuid",
      "none (in a projection)",
      e => Right(Seq(Literal(e.asInstanceOf[Uuid].randomSeed.get)))
    ),
    classOf[Shuffle] -> Fn(
      "shuffle",
      "array (in a projection)",
      e => {
        val s = e.asInstanceOf[Shuffle]
        Right(Seq(s.child, Literal(s.randomSeed.get)))
      }
    ),
    classOf[WidthBucket] -> Fn("width_bucket", "double, double, double, bigint", all),
    classOf[Hex] -> Fn("hex", "bigint/string/binary", all),
    classOf[Unhex] -> Fn("unhex", "string", unhex),
    classOf[Bin] -> Fn("bin", "bigint", all)
  )

  val registry: Map[Class[_], Fn] = Map[Class[_], Fn](
    classOf[Like] -> Fn("like", "string LIKE literal pattern, any escape character", like),
    classOf[RLike] -> Fn(
      "rlike",
      s"$stringTypes, literal Java pattern (see docs/compatibility.md)",
      regexp,
      aliases = Set("regexp", "regexp_like")
    ),
    classOf[RegExpExtract] -> Fn(
      "regexp_extract",
      s"$stringTypes, literal Java pattern and group index",
      regexp
    ),
    classOf[RegExpInStr] -> Fn("regexp_instr", s"$stringTypes, literal Java pattern", regexp),
    classOf[RegExpReplace] -> Fn(
      "regexp_replace",
      s"$stringTypes, literal Java pattern and replacement, position 1",
      regexp
    ),
    classOf[StartsWith] -> Fn("startswith", stringTypes, strings(2)),
    classOf[EndsWith] -> Fn("endswith", stringTypes, strings(2)),
    classOf[Contains] -> Fn("contains", stringTypes, strings(2)),
    classOf[Substring] -> Fn("substring", stringTypes, strings(1)),
    classOf[Length] -> Fn("length", stringTypes, strings(1)),
    classOf[OctetLength] -> Fn("octet_length", stringTypes, strings(1)),
    classOf[BitLength] -> Fn("bit_length", stringTypes, strings(1)),
    classOf[Year] -> Fn("year", "date (timestamps through Spark's cast to date)", dates),
    classOf[Quarter] -> Fn("quarter", "date", dates),
    classOf[Month] -> Fn("month", "date", dates),
    classOf[DayOfMonth] -> Fn("day", "date", dates),
    classOf[DayOfYear] -> Fn("dayofyear", "date", dates),
    classOf[DayOfWeek] -> Fn("dayofweek", "date", dates),
    classOf[WeekDay] -> Fn("weekday", "date", dates),
    classOf[DateAdd] -> Fn("date_add", "date, tinyint/smallint/int", dates),
    classOf[DateSub] -> Fn("date_sub", "date, tinyint/smallint/int", dates),
    classOf[DateDiff] -> Fn("datediff", "date, date", dates),
    classOf[Pmod] -> Fn(
      "pmod",
      "tinyint/smallint/int/bigint/float/double",
      pmod,
      e => e.asInstanceOf[Pmod].evalMode
    ),
    classOf[BitwiseAnd] -> Fn("bit_and", ints, all),
    classOf[BitwiseOr] -> Fn("bit_or", ints, all),
    classOf[BitwiseXor] -> Fn("bit_xor", ints, all),
    classOf[BitwiseNot] -> Fn("bit_not", ints, all),
    classOf[ShiftLeft] -> Fn("shiftleft", "int/bigint, int", all),
    classOf[ShiftRight] -> Fn("shiftright", "int/bigint, int", all),
    classOf[ShiftRightUnsigned] -> Fn("shiftrightunsigned", "int/bigint, int", all),
    classOf[IsNaN] -> Fn("isnan", "float/double", all),
    classOf[NaNvl] -> Fn("nanvl", "float/double", all),
    classOf[Sqrt] -> Fn("sqrt", "double", all),
    classOf[Signum] -> Fn("signum", "double", all),
    classOf[Greatest] -> Fn(
      "greatest",
      "boolean, integers, decimal, date, string (UTF8_BINARY), binary",
      extremum
    ),
    classOf[Least] -> Fn("least", "boolean, integers, decimal, date, string (UTF8_BINARY), binary", extremum),
    classOf[Ascii] -> Fn("ascii", stringTypes, strings(1)),
    classOf[Chr] -> Fn("chr", "bigint", all),
    classOf[Reverse] -> Fn("reverse", stringTypes, strings(1)),
    classOf[WeekOfYear] -> Fn("weekofyear", "date", dates),
    classOf[LastDay] -> Fn("last_day", "date", dates),
    classOf[TruncDate] -> Fn("trunc", "date, string format", dates),
    classOf[Abs] -> Fn(
      "abs",
      "tinyint/smallint/int/bigint/float/double/decimal",
      all,
      e => if (e.asInstanceOf[Abs].failOnError) EvalMode.ANSI else EvalMode.LEGACY
    ),
    classOf[Upper] -> Fn("upper", s"$stringTypes, ICU case mappings, root-like default locale", caseMapping),
    classOf[Lower] -> Fn("lower", s"$stringTypes, ICU case mappings, root-like default locale", caseMapping),
    classOf[InitCap] -> Fn(
      "initcap",
      s"$stringTypes, ICU case mappings, root-like default locale",
      caseMapping
    ),
    classOf[StringTrim] -> Fn(
      "trim",
      s"$stringTypes, optional trim string",
      e => strings(e.children.size)(e)
    ),
    classOf[StringTrimLeft] -> Fn(
      "ltrim",
      s"$stringTypes, optional trim string",
      e => strings(e.children.size)(e)
    ),
    classOf[StringTrimRight] -> Fn(
      "rtrim",
      s"$stringTypes, optional trim string",
      e => strings(e.children.size)(e)
    ),
    classOf[StringLPad] -> Fn("lpad", s"$stringTypes, int, string", e => strings(1)(e).flatMap(_ => pad(e))),
    classOf[StringRPad] -> Fn("rpad", s"$stringTypes, int, string", e => strings(1)(e).flatMap(_ => pad(e))),
    classOf[StringReplace] -> Fn("replace", stringTypes, strings(3)),
    classOf[StringTranslate] -> Fn("translate", stringTypes, strings(3)),
    classOf[StringInstr] -> Fn("instr", stringTypes, strings(2)),
    classOf[StringLocate] -> Fn("locate", s"$stringTypes, int", strings(2)),
    classOf[Concat] -> Fn("concat", stringTypes, allStrings),
    classOf[ConcatWs] -> Fn("concat_ws", s"$stringTypes (not arrays)", allStrings),
    classOf[StringRepeat] -> Fn("repeat", s"$stringTypes, int", strings(1)),
    classOf[Levenshtein] -> Fn("levenshtein", s"$stringTypes, optional literal int threshold", levenshtein),
    classOf[SoundEx] -> Fn("soundex", stringTypes, strings(1)),
    classOf[SubstringIndex] -> Fn("substring_index", s"$stringTypes, string, int", strings(2)),
    // Timestamps in the session time zone: UTC, fixed offsets and the tz database's region zones.
    classOf[Hour] -> Fn("hour", "timestamp (session time zone)", all),
    classOf[Minute] -> Fn("minute", "timestamp (session time zone)", all),
    classOf[Second] -> Fn("second", "timestamp (session time zone)", all),
    classOf[TruncTimestamp] -> Fn("date_trunc", "string format, timestamp (session time zone)", all),
    classOf[ConvertTimezone] -> Fn("convert_timezone", "literal time zones, timestamp_ntz", all),
    classOf[FromUTCTimestamp] -> Fn("from_utc_timestamp", "timestamp, literal time zone", all),
    classOf[ToUTCTimestamp] -> Fn("to_utc_timestamp", "timestamp, literal time zone", all),
    classOf[UnixSeconds] -> Fn("unix_seconds", "timestamp", all),
    classOf[UnixMillis] -> Fn("unix_millis", "timestamp", all),
    classOf[UnixMicros] -> Fn("unix_micros", "timestamp", all),
    classOf[UnixTimestamp] -> Fn(
      "unix_timestamp",
      "timestamp, timestamp_ntz, date (not strings)",
      unixTimestamp
    ),
    classOf[ToUnixTimestamp] -> Fn(
      "to_unix_timestamp",
      "timestamp, timestamp_ntz, date (not strings)",
      unixTimestamp
    ),
    // Arrays inside an expression (docs/compatibility.md).
    classOf[StringSplit] -> Fn("split", s"$stringTypes, literal Java pattern, int limit", split),
    classOf[Size] -> Fn("size", "array", size, aliases = Set("cardinality")),
    classOf[ElementAt] -> Fn("element_at", "array, int", elementAt, failOnError),
    classOf[GetArrayItem] -> Fn("array_item", "array, int/bigint", all, failOnError),
    classOf[ArrayContains] -> Fn("array_contains", "array of orderable scalars, value", all),
    classOf[ArrayPosition] -> Fn("array_position", "array of orderable scalars, value", all),
    classOf[ArrayMax] -> Fn("array_max", "array of orderable scalars", all),
    classOf[ArrayMin] -> Fn("array_min", "array of orderable scalars", all),
    classOf[ArrayJoin] -> Fn("array_join", s"array of $stringTypes, delimiter[, null replacement]", all),
    classOf[CreateArray] -> Fn("array", "scalars of one type", all),
    classOf[SortArray] -> Fn("sort_array", "array of orderable scalars, boolean", all),
    classOf[ArrayRemove] -> Fn("array_remove", "array of orderable scalars, value", all),
    classOf[Slice] -> Fn("slice", "array, int, int", all),
    classOf[ArrayDistinct] -> Fn("array_distinct", "array of orderable scalars but float/double", all),
    classOf[ArrayUnion] -> Fn("array_union", "arrays of orderable scalars but float/double", all),
    classOf[ArrayIntersect] -> Fn("array_intersect", "arrays of orderable scalars but float/double", all),
    classOf[ArrayExcept] -> Fn("array_except", "arrays of orderable scalars but float/double", all),
    classOf[ArraysOverlap] -> Fn("arrays_overlap", "arrays of orderable scalars but float/double", all),
    classOf[RegExpExtractAll] -> Fn(
      "regexp_extract_all",
      s"$stringTypes, literal Java pattern and group index",
      regexp
    ),
    classOf[DateFormatClass] -> Fn(
      "date_format",
      "timestamp, literal pattern (see docs/compatibility.md)",
      datetimePattern
    ),
    classOf[FromUnixTime] -> Fn(
      "from_unixtime",
      "bigint, literal pattern (see docs/compatibility.md)",
      datetimePattern
    ),
    classOf[SecondsToTimestamp] -> Fn("timestamp_seconds", ints, all),
    classOf[MillisToTimestamp] -> Fn("timestamp_millis", ints, all),
    classOf[MicrosToTimestamp] -> Fn("timestamp_micros", ints, all),
    classOf[AddMonths] -> Fn("add_months", "date, int", all),
    classOf[MonthsBetween] -> Fn("months_between", "timestamp, timestamp, boolean (session time zone)", all),
    classOf[NextDay] -> Fn(
      "next_day",
      "date, string (under ANSI a valid literal day name)",
      all,
      failOnError
    ),
    classOf[MakeDate] -> Fn("make_date", "int, int, int", all, failOnError)
  ) ++ transcendental ++ rounding ++ bytesAndBits

  /** The pad string too must be UTF8_BINARY (lpad / rpad of binary are other expressions). */
  private def pad(e: Expression): Either[String, Seq[Expression]] =
    if (binaryString(e.children(2).dataType)) Right(e.children)
    else Left(s"${e.prettyName} with a ${e.children(2).dataType.simpleString} pad")

  /** Expressions of the registry that Spark's function registry has no name for (`arr[i]`). */
  val operators: Set[Class[_]] = Set(classOf[GetArrayItem])

  /** Class names of the expressions this registry converts. */
  def nativeClasses: Map[String, Fn] = registry.map { case (c, f) => c.getName -> f }

  def handles(e: Expression): Boolean = registry.contains(e.getClass) || invoked(e).isDefined

  /** `e` (one [[handles]]) as a `ScalarFunction`, its arguments converted by `arg`. */
  def convert(
      e: Expression,
      tz: String,
      arg: Expression => Either[String, proto.Expr],
      typ: DataType => Either[String, proto.DataType]
  ): Either[String, proto.Expr] = {
    val fn = registry.get(e.getClass).orElse(invoked(e)).get
    // A time-zone-aware expression carries the zone Spark resolved for it (the session's).
    val zone = e match {
      case t: TimeZoneAwareExpression => t.timeZoneId.getOrElse(tz)
      case _ => tz
    }
    for {
      args <- fn.args(e)
      converted <- args.foldLeft[Either[String, Vec]](Right(Vector.empty))((acc, a) =>
        acc.flatMap(xs => arg(a).map(xs :+ _))
      )
      rt <- typ(e.dataType)
    } yield {
      val b = proto.ScalarFunction
        .newBuilder()
        .setName(if (fn.aliases.contains(e.prettyName)) e.prettyName else fn.name)
        .setReturnType(rt)
        .setEvalMode(ExprSerde.evalMode(fn.mode(e)))
        .setTimezone(zone)
        .setQueryContext(QueryContexts.id(e))
      converted.foreach(b.addArgs)
      proto.Expr.newBuilder().setScalarFunction(b).build()
    }
  }

  private type Vec = Vector[proto.Expr]
}
