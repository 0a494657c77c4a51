package org.cloudhpc.peers.mapreduce;

import java.util.ArrayList;
import java.util.List;

/** Doubles in configuration values and result files: hexadecimal literals, exact to the bit. */
final class Codec {
  private Codec() {}

  static String join(double[] values) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < values.length; i++) {
      if (i > 0) {
        b.append(',');
      }
      b.append(Double.toHexString(values[i]));
    }
    return b.toString();
  }

  static double[] split(String text) {
    String[] parts = text.split(",");
    double[] out = new double[parts.length];
    for (int i = 0; i < parts.length; i++) {
      out[i] = Double.parseDouble(parts[i].trim());
    }
    return out;
  }

  /** Whitespace-separated decimal (or hex) numbers of one text line; the shortest round-trip
   *  decimal that Python's repr writes parses to the same double. */
  static double[] fields(String line) {
    List<String> tokens = new ArrayList<>();
    for (String t : line.trim().split("\\s+")) {
      if (!t.isEmpty()) {
        tokens.add(t);
      }
    }
    double[] out = new double[tokens.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = Double.parseDouble(tokens.get(i));
    }
    return out;
  }
}
