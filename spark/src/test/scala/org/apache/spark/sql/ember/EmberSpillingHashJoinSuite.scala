package org.apache.spark.sql.ember

import org.apache.spark.SparkConf
import org.apache.spark.sql.Column
import org.apache.spark.sql.catalyst.optimizer.{BuildLeft, BuildRight}
import org.apache.spark.sql.classic.DataFrame
import org.apache.spark.sql.ember.execution._
import org.apache.spark.sql.execution.joins.{ShuffledHashJoinExec, SortMergeJoinExec}
import org.apache.spark.sql.functions._
import org.ember.EmberConf

/**
 * `ShuffledHashJoinExec` as the native spilling hash join: every join type Spark plans with it, both build
 * sides, residual conditions, several keys, keys of every native type, null keys, `<=>`, empty sides, ANSI on
 * and off — in memory and forced to spill — plus the sort-merge join replacement.
 */
class EmberSpillingHashJoinSuite extends EmberQueryTest {

  // Shuffled hash joins wherever Spark can plan one (no broadcast; `forceApplyShuffledHashJoin` is honoured in
  // tests); hints choose the build side.
  override protected def sparkConf: SparkConf = super.sparkConf
    .set("spark.sql.autoBroadcastJoinThreshold", "-1")
    .set("spark.sql.join.preferSortMergeJoin", "false")
    .set("spark.sql.join.forceApplyShuffledHashJoin", "true")

  private lazy val left: DataFrame = DataGen.table(spark, 1500, seed = 1).cache()
  private lazy val right: DataFrame = DataGen.table(spark, 1200, seed = 2).cache()

  /** Two sides over a small key domain (many matches, duplicate keys, null keys). */
  private def side(df: DataFrame, p: String): DataFrame = df.select(
    col("id").as(s"${p}id"),
    (col("i32") % 40).as(s"${p}k"),
    col("s").as(s"${p}s"),
    col("i64").as(s"${p}v"),
    col("dec").as(s"${p}d")
  )
  private lazy val l = side(left, "l")
  private lazy val r = side(right, "r")

  private val joinTypes =
    Seq("inner", "left_outer", "right_outer", "full_outer", "left_semi", "left_anti")

  private def joins(df: DataFrame): Seq[EmberSpillingHashJoinExec] =
    collectWithSubqueries(df.queryExecution.executedPlan) { case j: EmberSpillingHashJoinExec => j }

  private def join(jt: String, buildLeft: Boolean, cond: Column): DataFrame =
    if (buildLeft) l.hint("shuffle_hash").join(r, cond, jt) else l.join(r.hint("shuffle_hash"), cond, jt)

  private val equi: Column = col("lk") === col("rk")
  private val residual: Column = col("lk") === col("rk") && col("lv") < col("rv")

  test("every join type, both build sides, with and without a residual condition, ANSI on and off") {
    bothAnsiModes { _ =>
      val used = scala.collection.mutable.Set.empty[(String, String)]
      for (jt <- joinTypes; buildLeft <- Seq(true, false); cond <- Seq(equi, residual)) {
        val df = checkSparkAnswerAndNative(join(jt, buildLeft, cond), Seq(cls[EmberSpillingHashJoinExec]))
        joins(df).foreach(j => used += (jt -> j.buildSide.toString))
      }
      for (jt <- Seq("inner", "left_outer", "right_outer", "full_outer"))
        assert(used.contains(jt -> BuildLeft.toString) && used.contains(jt -> BuildRight.toString), used)
      for (jt <- joinTypes) assert(used.exists(_._1 == jt), s"$jt never ran natively: $used")
    }
  }

  test("keys of every type the native join supports, several keys; null keys never match") {
    val keyTypes = Seq("b", "i8", "i16", "i32", "i64", "dec", "dec38", "s", "bin", "dt", "ts", "ntz")
    for (k <- keyTypes) {
      // Booleans have three values: a few rows keep the output small.
      val n = if (k == "b") 40 else Int.MaxValue
      val a = left.where(col("id") < n).select(col("id").as("a_id"), col(k).as("a_k"), col("s").as("a_s"))
      val b = right.where(col("id") < n).select(col("id").as("b_id"), col(k).as("b_k"), col("i32").as("b_i"))
      for (jt <- Seq("inner", "full_outer", "left_anti"))
        checkSparkAnswerAndNative(
          a.join(b.hint("shuffle_hash"), col("a_k") === col("b_k"), jt),
          Seq(cls[EmberSpillingHashJoinExec])
        )
    }
    // Three keys at once, one of them an expression.
    val a = left.select(left.columns.map(c => col(c).as(s"a_$c")).toIndexedSeq: _*)
    val b = right.select(right.columns.map(c => col(c).as(s"b_$c")).toIndexedSeq: _*)
    checkSparkAnswerAndNative(
      a.join(
        b.hint("shuffle_hash"),
        col("a_s") === col("b_s") && col("a_b") === col("b_b") && (col("a_i16") % 7) === (col("b_i16") % 7),
        "left_outer"
      ),
      Seq(cls[EmberSpillingHashJoinExec])
    )
  }

  test(
    "FLOAT / DOUBLE keys: every NaN matches every NaN, -0.0 matches 0.0, nulls never match; spilling too"
  ) {
    import org.apache.spark.sql.Row
    import org.apache.spark.sql.types._
    // Keys as raw (DOUBLE, FLOAT) bits, made into values inside the tasks. Values made on the driver reach the
    // tasks through Java (or Kryo) serialization of the parallelized collection, whose doubleToLongBits /
    // floatToIntBits turn every NaN into the canonical one: the native join then matched them by their equal bits
    // even with its normalization broken. (-0.0 survives that, but DataFusion's hash join itself hashes and
    // compares -0.0 as 0.0, so the join's rows cannot show the -0.0 half of the normalization; the native tests
    // check it on the key expressions.)
    val bits = Seq(
      (0x7ff8000000000000L, 0x7fc00000), // Double.NaN, Float.NaN
      (0x7ff8000000000001L, 0x7fc00001), // NaNs with a payload
      (0xfff8000000000000L, 0xffc00000), // negative NaNs
      (0x7ff0000000000001L, 0x7f800001), // signalling NaNs
      (0x0000000000000000L, 0x00000000), // 0.0
      (0x8000000000000000L, 0x80000000), // -0.0
      (0x7ff0000000000000L, 0x7f800000), // +inf
      (0xfff0000000000000L, 0xff800000), // -inf
      (java.lang.Double.doubleToRawLongBits(1.5), java.lang.Float.floatToRawIntBits(1.5f)),
      (java.lang.Double.doubleToRawLongBits(-1.5), java.lang.Float.floatToRawIntBits(-1.5f))
    )
    // `own`: a NaN pattern only this side has, so that semi and anti joins see un-normalized NaNs too.
    def keys(seed: Int, n: Int, own: (Long, Int)): DataFrame = {
      val sideBits = bits :+ own
      val r = new scala.util.Random(seed)
      val picks = (0 until n).map(i => (i.toLong, if (r.nextInt(9) == 0) -1 else r.nextInt(sideBits.size)))
      val rows = spark.sparkContext.parallelize(picks, 3).map { case (id, pick) =>
        if (pick < 0) Row(id, null, null)
        else {
          val (d, f) = sideBits(pick)
          Row(id, java.lang.Double.longBitsToDouble(d), java.lang.Float.intBitsToFloat(f))
        }
      }
      val schema = StructType(
        Seq(StructField("id", LongType), StructField("d", DoubleType), StructField("f", FloatType))
      )
      spark.createDataFrame(rows, schema)
    }
    val a = keys(1, 300, (0x7ff8000000000002L, 0x7fc00002))
      .select(col("id").as("a_id"), col("d").as("a_d"), col("f").as("a_f"))
    val b = keys(2, 200, (0xfff0000000000001L, 0xff800001))
      .select(col("id").as("b_id"), col("d").as("b_d"), col("f").as("b_f"))
    val tinyBuild = Seq(
      EmberConf.SPILLING_HASH_JOIN_MAX_BUILD_BUFFER.key -> "4096",
      EmberConf.BATCH_SIZE.key -> "16",
      EmberConf.SPILLING_HASH_JOIN_BUCKET_BITS.key -> "2"
    )
    for (
      (k, conf) <- Seq(
        (col("a_d") === col("b_d"), Nil),
        (col("a_f") === col("b_f"), Nil),
        (col("a_d") === col("b_d") && col("a_f") === col("b_f"), Nil),
        (col("a_d") === col("b_d"), tinyBuild)
      );
      jt <- Seq("inner", "full_outer", "left_semi", "left_anti")
    ) withSQLConf(conf: _*) {
      val df =
        checkSparkAnswerAndNative(a.join(b.hint("shuffle_hash"), k, jt), Seq(cls[EmberSpillingHashJoinExec]))
      if (conf.nonEmpty) assert(metric(df, "spilled_buckets") > 0, jt)
    }
  }

  test("<=> keys: nulls match nulls exactly as in Spark") {
    for (jt <- joinTypes; buildLeft <- Seq(true, false)) {
      checkSparkAnswerAndNative(
        join(jt, buildLeft, col("lk") <=> col("rk")),
        Seq(cls[EmberSpillingHashJoinExec])
      )
    }
    // Mixed: one null-safe and one ordinary key.
    checkSparkAnswerAndNative(
      join("full_outer", buildLeft = false, col("lk") <=> col("rk") && col("ls") === col("rs")),
      Seq(cls[EmberSpillingHashJoinExec])
    )
  }

  test("existence join (EXISTS in a disjunction) as a mark join") {
    l.createOrReplaceTempView("lt")
    r.createOrReplaceTempView("rt")
    for (
      q <- Seq(
        "SELECT * FROM lt WHERE EXISTS (SELECT 1 FROM rt WHERE rt.rk = lt.lk) OR lt.lv > 0",
        "SELECT * FROM lt WHERE EXISTS (SELECT 1 FROM rt WHERE rt.rk = lt.lk AND rt.rv > lt.lv) OR lt.lid < 10",
        "SELECT * FROM lt WHERE lt.lk IN (SELECT rk FROM rt WHERE rt.rs > 's2') OR lt.ls IS NULL"
      )
    ) {
      val df = checkSparkAnswerAndNative(spark.sql(q), Seq(cls[EmberSpillingHashJoinExec]))
      assert(
        joins(df).exists(_.joinType.toString.startsWith("ExistenceJoin")),
        df.queryExecution.executedPlan
      )
    }
  }

  test("a join over a join on the same key (no exchange between): three inputs, two native plans") {
    // A tenth of the right side: ~3 rows per key keep the second join's output near 100k rows (the full side
    // made it 1.35M rows per join type, collected twice, for no extra coverage).
    val r2 = right.where(col("id") % 10 === 0).select((col("i32") % 40).as("k2"), col("s").as("s2"))
    for (jt <- Seq("inner", "left_outer", "left_semi")) {
      val df = checkSparkAnswerAndNative(
        l.join(r.hint("shuffle_hash"), equi).join(r2.hint("shuffle_hash"), col("lk") === col("k2"), jt),
        Seq(cls[EmberSpillingHashJoinExec])
      )
      assert(joins(df).size == 2, df.queryExecution.executedPlan)
    }
  }

  test("empty sides") {
    val empty = (d: DataFrame, c: String) => d.where(col(c) < 0)
    for (jt <- joinTypes; buildLeft <- Seq(true, false)) {
      for ((a, b) <- Seq((empty(l, "lid"), r), (l, empty(r, "rid")), (empty(l, "lid"), empty(r, "rid")))) {
        checkSparkAnswerAndNative(
          if (buildLeft) a.hint("shuffle_hash").join(b, equi, jt)
          else a.join(b.hint("shuffle_hash"), equi, jt),
          Seq(cls[EmberSpillingHashJoinExec])
        )
      }
    }
  }

  test("floating-point keys that Spark did not normalize stay in Spark, with the reason") {
    // A hand-built plan node: Spark's optimizer always normalizes float keys of equi-joins, so the only way to
    // see an unnormalized key is to ask the serde directly.
    val a = left.select(col("f64").as("x"), col("id").as("ai"))
    val b = right.select(col("f64").as("y"), col("id").as("bi"))
    val x = a.queryExecution.analyzed.output.head
    val y = b.queryExecution.analyzed.output.head
    val reason = serde.SpillingHashJoinSerde.hashJoin(
      Seq(x),
      Seq(y),
      org.apache.spark.sql.catalyst.plans.Inner,
      org.apache.spark.sql.catalyst.optimizer.BuildRight,
      None,
      a.queryExecution.executedPlan,
      b.queryExecution.executedPlan
    )
    assert(reason.left.exists(_.contains("join key of type double not normalized by Spark")), reason)
  }

  private val spillConf = Seq(
    EmberConf.SPILLING_HASH_JOIN_MAX_BUILD_BUFFER.key -> (16L << 10).toString,
    EmberConf.BATCH_SIZE.key -> "64",
    EmberConf.SPILLING_HASH_JOIN_BUCKET_BITS.key -> "2"
  )

  private def metric(df: DataFrame, name: String): Long = joins(df).map(_.metrics(name).value).sum

  /** `rows` rows over `domain` keys (plus null keys); `hot` of them (the first ids) share the key 7. */
  private def keyed(seed: Long, p: String, rows: Int, domain: Int, hot: Int): DataFrame =
    DataGen
      .table(spark, rows, seed = seed)
      .select(
        col("id").as(s"${p}id"),
        when(col("id") < hot, lit(7)).otherwise(col("i32") % domain).as(s"${p}k"),
        col("s").as(s"${p}s"),
        col("i64").as(s"${p}v")
      )

  test("forced to spill: every join type, both build sides, Spark's rows; spill metrics reported") {
    val bl = keyed(3, "l", 3000, 1000, 0).cache()
    val br = keyed(4, "r", 3000, 1000, 0).cache()
    withSQLConf(spillConf: _*) {
      for (jt <- joinTypes; buildLeft <- Seq(true, false); cond <- Seq(equi, residual)) {
        val checked = checkSparkAnswerAndNative(
          if (buildLeft) bl.hint("shuffle_hash").join(br, cond, jt)
          else bl.join(br.hint("shuffle_hash"), cond, jt),
          Seq(cls[EmberSpillingHashJoinExec])
        )
        assert(metric(checked, "spilled_buckets") > 0, s"$jt buildLeft=$buildLeft did not spill")
        assert(metric(checked, "spillCount") > 0, "spill files are counted")
        assert(metric(checked, "spilledBytes") > 0, "spilled bytes are counted")
        assert(metric(checked, "build_rows") > 0 && metric(checked, "probe_rows") > 0)
      }
    }
  }

  test(
    "dynamic filter: rows exact for every join type and build side; probe rows pruned only where valid"
  ) {
    val dynamicFilterConf = Seq(
      EmberConf.DYNAMIC_FILTER_ENABLED.key -> "true",
      EmberConf.DYNAMIC_FILTER_IN_JOIN.key -> "true",
      EmberConf.DYNAMIC_FILTER_SAMPLE_ROWS.key -> "100",
      EmberConf.DYNAMIC_FILTER_IN_JOIN_MIN_PRUNED_FRACTION.key -> "0.0",
      EmberConf.DYNAMIC_FILTER_MAX_SET_VALUES.key -> "2",
      // Small enough to fit beside the spilling join's 16 KiB cap (a filter the budget refuses is not used).
      EmberConf.DYNAMIC_FILTER_BLOOM_BYTES.key -> "256"
    )
    // The build side is 20 rows, so it holds few of the keys -39..39 (and null keys): most probe rows cannot
    // match. Selected by id, not by key: from a predicate on the key Spark infers the same one on the probe side.
    val (lSel, rSel) = (l.where(col("lid") < 20), r.where(col("rid") < 20))
    var pruned = 0L
    for (
      jt <- joinTypes; buildLeft <- Seq(true, false); cond <- Seq(equi, residual);
      spill <- Seq(false, true) if !(spill && cond == residual)
    ) {
      // A def: each engine plans its own DataFrame (a DataFrame keeps the plan it was first executed with).
      def q =
        if (buildLeft) lSel.hint("shuffle_hash").join(r, cond, jt)
        else l.join(rSel.hint("shuffle_hash"), cond, jt)
      withSQLConf(dynamicFilterConf ++ (if (spill) spillConf else Nil): _*) {
        val df = checkSparkAnswerAndNative(q, Seq(cls[EmberSpillingHashJoinExec]))
        val built = joins(df).map(_.buildSide).distinct
        assert(built.size == 1, built)
        // Pruning the probe side is exact where it is not preserved (Spark's join type, seen from the build side).
        val valid = (jt, built.head) match {
          case ("inner", _) | ("left_semi", _) => true
          case ("left_outer" | "left_anti", BuildLeft) => true
          case ("right_outer", BuildRight) => true
          case _ => false
        }
        val what = s"$jt build=${built.head} spill=$spill cond=$cond"
        // Spark may build on the other side than hinted (never left for a left semi or anti join): then the build
        // side is the unselective one and holds every key, and the 20-row probe side is below the gate's sample.
        val selective = built.head == (if (buildLeft) BuildLeft else BuildRight)
        if (valid) {
          assert(metric(df, "dynamic_filter_rows_checked") > 0, what)
          if (selective) {
            assert(metric(df, "dynamic_filter_rows_pruned") > 0, what)
            assert(metric(df, "dynamic_filter_kept") > 0, what)
          }
          pruned += metric(df, "dynamic_filter_rows_pruned")
        } else {
          assert(
            metric(df, "dynamic_filter_rows_checked") == 0,
            s"$what: a preserved probe side was filtered"
          )
        }
      }
    }
    assert(pruned > 0)
    // Off by default: nothing checked.
    val df =
      checkSparkAnswerAndNative(l.join(rSel.hint("shuffle_hash"), equi), Seq(cls[EmberSpillingHashJoinExec]))
    assert(metric(df, "dynamic_filter_rows_checked") == 0)
  }

  test("forced to spill: a hot key is joined in chunks, for every join type") {
    // Build (right): 2000 of 3000 rows on one key; probe (left): 10 rows on it.
    val probe = keyed(5, "l", 3000, 1000, 10).cache()
    val build = keyed(6, "r", 3000, 1000, 2000).cache()
    withSQLConf(spillConf: _*) {
      for (jt <- joinTypes; cond <- Seq(equi, residual)) {
        val checked =
          checkSparkAnswerAndNative(
            probe.join(build.hint("shuffle_hash"), cond, jt),
            Seq(cls[EmberSpillingHashJoinExec])
          )
        assert(metric(checked, "chunked_buckets") > 0, s"$jt: the hot key's bucket is joined in chunks")
      }
    }
  }

  test("forced to spill: <=> keys and existence joins") {
    withSQLConf(spillConf: _*) {
      for (jt <- joinTypes) {
        val df = checkSparkAnswerAndNative(
          join(jt, buildLeft = false, col("lk") <=> col("rk")),
          Seq(cls[EmberSpillingHashJoinExec])
        )
        assert(metric(df, "spilled_buckets") > 0, jt)
      }
      l.createOrReplaceTempView("lt")
      r.createOrReplaceTempView("rt")
      val df = checkSparkAnswerAndNative(
        spark.sql("SELECT * FROM lt WHERE EXISTS (SELECT 1 FROM rt WHERE rt.rk = lt.lk) OR lt.lv > 0"),
        Seq(cls[EmberSpillingHashJoinExec])
      )
      assert(metric(df, "spilled_buckets") > 0)
    }
  }

  test("spilling disabled: the join runs in memory and does not spill") {
    withSQLConf(EmberConf.SPILLING_HASH_JOIN_SPILL.key -> "false") {
      val df = checkSparkAnswerAndNative(
        join("full_outer", buildLeft = true, residual),
        Seq(cls[EmberSpillingHashJoinExec])
      )
      assert(metric(df, "spilled_buckets") == 0 && metric(df, "spillCount") == 0)
    }
    // With the cap below the build side and spilling off, the task fails cleanly instead of spilling.
    withSQLConf((spillConf :+ (EmberConf.SPILLING_HASH_JOIN_SPILL.key -> "false")): _*) {
      // The sides that spill in the test above.
      val df = keyed(3, "l", 3000, 1000, 0).hint("shuffle_hash").join(keyed(4, "r", 3000, 1000, 0), equi)
      val e = intercept[Exception](df.collect())
      val messages = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.toString).toSeq
      assert(messages.exists(_.contains("spilling is disabled")), messages.mkString("\n"))
      assertNoNativeMemoryHeld()
    }
  }

  test("replaceSortMergeJoin: a sort-merge join runs as the native hash join, building on the smaller side") {
    withSQLConf(
      "spark.sql.join.preferSortMergeJoin" -> "true",
      "spark.sql.join.forceApplyShuffledHashJoin" -> "false",
      EmberConf.EXEC_REPLACE_SMJ.key -> "true"
    ) {
      val small = r.where(col("rid") < 300)
      for (jt <- joinTypes) {
        val sparkPlan = withEmber(enabled = false)(l.join(small, equi, jt).queryExecution.executedPlan)
        assert(collectWithSubqueries(sparkPlan) { case s: SortMergeJoinExec => s }.nonEmpty, sparkPlan)
        val checked = checkSparkAnswerAndNative(l.join(small, equi, jt), Nil)
        val native = joins(checked)
        assert(native.nonEmpty, checked.queryExecution.executedPlan)
        assert(native.head.buildSide == BuildRight, "the right side is the smaller")
      }
      // The smaller side on the left: built on the left.
      val df = checkSparkAnswerAndNative(small.join(l, equi, "full_outer"), Nil)
      assert(joins(df).map(_.buildSide) == Seq(BuildLeft), df.queryExecution.executedPlan)
      // A second join on the same key, planned as a merge join reading the first one's output sorted: both run
      // as hash joins, the upper one needing no order.
      val r2 = r.select(col("rk").as("k2"), col("rv").as("v2"))
      val chained = checkSparkAnswerAndNative(l.join(small, equi).join(r2, col("lk") === col("k2")), Nil)
      val plan = chained.queryExecution.executedPlan
      assert(joins(chained).size == 2, plan)
      assert(collectWithSubqueries(plan) { case s: SortMergeJoinExec => s }.isEmpty, plan)
      // A Scala UDF in the upper join's condition: Spark evaluates it inside the native join, ...
      val lessThan = udf((a: Long, b: Long) => a < b)
      def udfJoin = l.join(small, equi).join(r2, col("lk") === col("k2") && lessThan(col("lv"), col("v2")))
      val both = withSQLConf(EmberConf.JVM_EXPRESSIONS.key -> "true")(checkSparkAnswerAndNative(udfJoin, Nil))
      assert(joins(both).size == 2, both.queryExecution.executedPlan)
      // ... or, with JVM expressions off, the upper join stays in Spark: the lower one is still native, sorted
      // for it.
      val kept =
        withSQLConf(EmberConf.JVM_EXPRESSIONS.key -> "false")(checkSparkAnswerAndNative(udfJoin, Nil))
      val keptPlan = kept.queryExecution.executedPlan
      val smj = collectWithSubqueries(keptPlan) { case s: SortMergeJoinExec => s }
      assert(smj.size == 1 && joins(kept).size == 1, keptPlan)
      val sortedForIt = smj.head.collect { case s: EmberSortExec => s }
      assert(sortedForIt.exists(_.find(_.isInstanceOf[EmberSpillingHashJoinExec]).isDefined), keptPlan)
    }
    // On by default; off, the merge join stays in Spark.
    withSQLConf(
      "spark.sql.join.preferSortMergeJoin" -> "true",
      "spark.sql.join.forceApplyShuffledHashJoin" -> "false"
    ) {
      val df = checkSparkAnswerAndNative(l.join(r, equi), Nil)
      assert(joins(df).size == 1, df.queryExecution.executedPlan)
      withSQLConf(EmberConf.EXEC_REPLACE_SMJ.key -> "false") {
        val off = l.join(r, equi)
        off.collect()
        assert(joins(off).isEmpty, off.queryExecution.executedPlan)
        assert(collectWithSubqueries(off.queryExecution.executedPlan) { case s: SortMergeJoinExec =>
          s
        }.nonEmpty)
      }
    }
  }
}
