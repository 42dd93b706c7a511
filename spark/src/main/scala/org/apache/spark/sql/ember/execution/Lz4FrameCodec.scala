package org.apache.spark.sql.ember.execution

import java.io.{ByteArrayInputStream, ByteArrayOutputStream}

import net.jpountz.lz4.{LZ4FrameInputStream, LZ4FrameOutputStream}
import org.apache.arrow.memory.{ArrowBuf, BufferAllocator}
import org.apache.arrow.vector.compression.{AbstractCompressionCodec, CompressionCodec, CompressionUtil}

/**
 * Arrow IPC's LZ4_FRAME buffer compression through lz4-java (which Spark ships), for the JVM side of Ember's
 * cache: Arrow's own codec lives in `arrow-compression`, which Spark does not ship. The engine reads the same
 * frames with arrow-rs's IPC reader.
 */
class Lz4FrameCodec extends AbstractCompressionCodec {
  override protected def doCompress(allocator: BufferAllocator, uncompressed: ArrowBuf): ArrowBuf = {
    val in = new Array[Byte](Math.toIntExact(uncompressed.writerIndex()))
    uncompressed.getBytes(0, in)
    val bytes = new ByteArrayOutputStream(in.length / 2 + 64)
    // 64 KiB blocks: the stream allocates a block buffer per Arrow buffer (the default 4 MiB made caching 4x slower).
    val out = new LZ4FrameOutputStream(
      bytes,
      LZ4FrameOutputStream.BLOCKSIZE.SIZE_64KB,
      LZ4FrameOutputStream.FLG.Bits.BLOCK_INDEPENDENCE
    )
    try out.write(in)
    finally out.close()
    val frame = bytes.toByteArray
    val compressed = allocator.buffer(CompressionUtil.SIZE_OF_UNCOMPRESSED_LENGTH + frame.length.toLong)
    compressed.setBytes(CompressionUtil.SIZE_OF_UNCOMPRESSED_LENGTH, frame)
    // The IPC writer takes a buffer's readable bytes as its body.
    compressed.writerIndex(CompressionUtil.SIZE_OF_UNCOMPRESSED_LENGTH + frame.length.toLong)
    compressed
  }

  override protected def doDecompress(allocator: BufferAllocator, compressed: ArrowBuf): ArrowBuf = {
    val length = Math.toIntExact(readUncompressedLength(compressed))
    val frame =
      new Array[Byte](Math.toIntExact(compressed.writerIndex() - CompressionUtil.SIZE_OF_UNCOMPRESSED_LENGTH))
    compressed.getBytes(CompressionUtil.SIZE_OF_UNCOMPRESSED_LENGTH, frame)
    val out = new Array[Byte](length)
    val in = new LZ4FrameInputStream(new ByteArrayInputStream(frame))
    try {
      var at = 0
      while (at < length) {
        val n = in.read(out, at, length - at)
        if (n < 0) throw new IllegalStateException(s"an LZ4 frame of $at bytes where $length were expected")
        at += n
      }
    } finally in.close()
    val buf = allocator.buffer(length.toLong)
    buf.setBytes(0, out)
    buf.writerIndex(length.toLong)
    buf
  }

  override def getCodecType: CompressionUtil.CodecType = CompressionUtil.CodecType.LZ4_FRAME
}

object Lz4FrameCodec {

  /** Codecs by type: LZ4_FRAME, or none. */
  object Factory extends CompressionCodec.Factory {
    override def createCodec(codecType: CompressionUtil.CodecType): CompressionCodec = codecType match {
      case CompressionUtil.CodecType.LZ4_FRAME => new Lz4FrameCodec
      case CompressionUtil.CodecType.NO_COMPRESSION =>
        org.apache.arrow.vector.compression.NoCompressionCodec.INSTANCE
      case other => throw new IllegalArgumentException(s"no Arrow codec for $other")
    }
    override def createCodec(codecType: CompressionUtil.CodecType, level: Int): CompressionCodec =
      createCodec(codecType)
  }
}
