package org.apache.spark.sql.ember.execution

import org.apache.spark.unsafe.Platform

/**
 * An input the native side pulls as byte buffers (`nextRows`, -1 at the end, then `packed`): records packed one
 * after the other, each preceded by its size (a little-endian long), in one buffer reused and grown as needed.
 * A subclass stops packing at about `maxBytes` per call; a buffer grown well past that (by a record larger than
 * `maxBytes`) is dropped at the next call, so one huge record does not hold its memory for the rest of the task.
 */
abstract class NativeByteSource(records: String, maxBytes: Long) extends NativeInputSource {
  private val initialBytes = 1 << 16
  private var buffer = new Array[Byte](initialBytes)
  private var length = 0

  /** Appends this call's records (at least one unless the input is exhausted) with [[reserve]]. */
  protected def fill(): Unit

  /** Bytes packed so far in this call. */
  protected def filled: Int = length

  /** The buffer to write a reserved record into (it may change at every [[reserve]]). */
  protected def bytes: Array[Byte] = buffer

  /** Room for a record of `size` bytes after its size word; returns where in [[bytes]] to write it. */
  protected final def reserve(size: Int): Long = {
    if (length + 8L + size > buffer.length) {
      val grown = math.max(buffer.length.toLong * 2, length + 8L + size)
      if (grown > Int.MaxValue - 16) throw new IllegalStateException(s"$records exceed 2 GiB")
      buffer = java.util.Arrays.copyOf(buffer, grown.toInt)
    }
    Platform.putLong(buffer, Platform.BYTE_ARRAY_OFFSET + length, size.toLong)
    val at = Platform.BYTE_ARRAY_OFFSET + length + 8L
    length += 8 + size
    at
  }

  /**
   * Packs the next records; returns how many bytes of [[packed]] hold them (until the next call), -1 at the end.
   * The native side copies them out of the buffer, which is reused from call to call.
   */
  final def nextRows(): Int = call {
    length = 0
    // Doubling keeps an ordinary call's buffer under 2 * maxBytes (plus one record); past that, start over.
    if (buffer.length > initialBytes && buffer.length > 2 * maxBytes) buffer = new Array[Byte](initialBytes)
    fill()
    if (length == 0) -1 else length
  }

  /** The buffer [[nextRows]] packed its records into. */
  final def packed: Array[Byte] = buffer
}
