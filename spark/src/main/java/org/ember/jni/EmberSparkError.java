package org.ember.jni;

import com.google.protobuf.InvalidProtocolBufferException;
import org.ember.proto.SparkError;

/**
 * A Spark error condition raised natively (e.g. ARITHMETIC_OVERFLOW under ANSI): the JVM side rethrows it as
 * the Spark exception Spark itself would throw ({@code org.apache.spark.sql.ember.EmberErrors}). Thrown by the
 * native side with the condition as a serialized proto {@code SparkError}.
 */
public class EmberSparkError extends RuntimeException {
  public final SparkError error;

  public EmberSparkError(byte[] error) throws InvalidProtocolBufferException {
    this(SparkError.parseFrom(error));
  }

  private EmberSparkError(SparkError error) {
    super("[" + error.getErrorClass() + "]");
    this.error = error;
  }
}
