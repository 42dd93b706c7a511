package org.ember.jni;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * The native methods of libember, and the loader that extracts the library for this platform from the jar
 * (resource {@code org/ember/native/<os>-<arch>/libember.so}) on first use.
 */
public final class NativeLib {
  private NativeLib() {}

  private static volatile boolean loaded = false;
  private static volatile Throwable loadError = null;

  /** The platform directory name in the jar, e.g. {@code linux-x86_64}. */
  public static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    String osName = os.startsWith("linux") ? "linux" : os.startsWith("mac") ? "darwin" : os.replace(' ', '_');
    String archName =
        arch.equals("amd64") || arch.equals("x86_64")
            ? "x86_64"
            : arch.equals("aarch64") || arch.equals("arm64") ? "aarch64" : arch;
    return osName + "-" + archName;
  }

  static String libraryFileName() {
    return platform().startsWith("darwin") ? "libember.dylib" : "libember.so";
  }

  /** Loads libember once; throws an error naming the platform when the jar has no library for it. */
  public static synchronized void load() {
    if (loaded) return;
    if (loadError != null) throw new IllegalStateException(loadError.getMessage(), loadError);
    String resource = "/org/ember/native/" + platform() + "/" + libraryFileName();
    try (InputStream in = NativeLib.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new UnsatisfiedLinkError(
            "Ember has no native library for platform " + platform() + " in its jar (looked for "
                + resource + "); build the jar on this platform with `make`");
      }
      Path tmp = Files.createTempFile("libember-", "-" + libraryFileName());
      tmp.toFile().deleteOnExit();
      Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
      System.load(tmp.toAbsolutePath().toString());
      loaded = true;
    } catch (IOException | UnsatisfiedLinkError e) {
      loadError = e;
      throw new IllegalStateException("Ember: cannot load its native library: " + e.getMessage(), e);
    }
  }

  /** Whether the native library can be loaded here (loads it if not yet). */
  public static boolean isAvailable() {
    try {
      load();
      return true;
    } catch (IllegalStateException e) {
      return false;
    }
  }

  public static native void initLogging(String level, String configFile);

  /**
   * Hands Spark's rebase tables for LEGACY Parquet timestamps ({@code tables}: a proto JulianRebaseTables) to
   * the engine; once per process, the first call wins.
   */
  public static native void registerJulianRebase(byte[] tables);

  /**
   * Builds the native plan for one task: {@code plan} is a proto Plan (built on the driver, the same for every
   * task), {@code task} a proto TaskSettings (this executor's spill dirs, the task's ids). Input i is {@code rowSources[i]} when not null (an object with
   * {@code int nextRows()} packing UnsafeRows, each preceded by its size, into {@code byte[] packed()}; -1 at the
   * end), else the exported
   * ArrowArrayStream at address {@code inputStreams[i]}, whose ownership moves to the native side; {@code memoryConsumer} has {@code long acquire(long)} and
   * {@code void release(long)}. Returns a handle for the other calls.
   */
  public static native long createPlan(
      byte[] plan, byte[] task, long[] inputStreams, Object[] rowSources, Object memoryConsumer);

  /** Exports the next batch into the given C structs; returns its row count, or -1 at the end. */
  public static native long nextBatch(long handle, long arrayAddress, long schemaAddress);

  /**
   * Writes the next batch as Spark UnsafeRows, each preceded by its size in bytes (a little-endian long), into
   * {@code buffer} (reused by the caller from batch to batch). Returns the bytes written; -1 at the end; or, when
   * the buffer is too small, minus the size needed — call again with a buffer at least that big.
   */
  public static native long nextRowsInto(long handle, byte[] buffer);

  /**
   * What the plan measured, a serialized proto PlanMetrics: per operator (by id) its baseline values and its own
   * values by name, the plan's reserved and peak memory. A node shows the values whose names it declares as SQL
   * metrics.
   */
  public static native byte[] metrics(long handle);

  /**
   * The engine's default for every knob a plan may leave at 0: a serialized proto EngineDefaults, the defaults
   * of the matching configuration keys.
   */
  public static native byte[] defaults();

  /**
   * Every operator-specific metric name the engine reports, per proto Operator kind: a serialized proto
   * MetricNames (checked against the execs' SQL metrics by the tests).
   */
  public static native byte[] metricNames();

  /**
   * Whether the engine plans {@code operator} (a serialized proto Operator whose Input leaves carry its children's
   * schemas) under {@code execConfig} (the session's serialized ExecConfig, with the JVM's version): null if so, else the planning error as the reason. Asked by the driver at planning time; nothing is
   * executed.
   */
  public static native String planSupport(byte[] operator, byte[] execConfig);

  /** Frees the plan: memory goes back to Spark, spill files are deleted. Call once. */
  public static native void closePlan(long handle);

  /**
   * On the driver: unites a join build side's key summaries ({@code summaries}: a proto DynamicFilterSummaries,
   * one DynamicFilter per map task) into a proto DynamicFilterUnion.
   */
  public static native byte[] unionDynamicFilters(byte[] summaries);

  /**
   * Opens the executor's registry of hash tables built from one broadcast value and shared by its tasks;
   * {@code memory} has {@code boolean acquire(long)} and {@code void release(long)} (Spark's storage memory).
   * Returns its handle, which {@code createPlan}'s broadcast sources hand over ({@code long sharedBuilds()}).
   */
  public static native long openSharedBuilds(Object memory);

  /** Drops the registry; tables still probed by running tasks go when those tasks end. Call once. */
  public static native void closeSharedBuilds(long handle);
}
