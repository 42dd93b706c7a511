package org.ember.jni;

/** A native error without a Spark error class: a malformed plan, an I/O failure, a native panic. */
public class EmberNativeException extends RuntimeException {
  public EmberNativeException(String message) {
    super(message);
  }
}
