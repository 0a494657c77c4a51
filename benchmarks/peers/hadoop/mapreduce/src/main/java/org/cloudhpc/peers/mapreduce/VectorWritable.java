package org.cloudhpc.peers.mapreduce;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import org.apache.hadoop.io.Writable;

/** A row of doubles: one center's partial sums and (last) its count of points. */
public class VectorWritable implements Writable {
  private double[] values = new double[0];

  public VectorWritable() {}

  public VectorWritable(double[] values) {
    this.values = values;
  }

  public double[] get() {
    return values;
  }

  @Override
  public void write(DataOutput out) throws IOException {
    out.writeInt(values.length);
    for (double v : values) {
      out.writeDouble(v);
    }
  }

  @Override
  public void readFields(DataInput in) throws IOException {
    int n = in.readInt();
    if (values.length != n) {
      values = new double[n];
    }
    for (int i = 0; i < n; i++) {
      values[i] = in.readDouble();
    }
  }

  @Override
  public String toString() {
    return Codec.join(values);
  }
}
