package org.cloudhpc.peers.giraph;

import org.apache.giraph.graph.Vertex;
import org.apache.giraph.io.formats.TextVertexOutputFormat;
import org.apache.hadoop.io.DoubleWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.TaskAttemptContext;

/** "id TAB value" per vertex, the value as a hexadecimal literal (exact to the bit). */
public class HexValueOutputFormat
    extends TextVertexOutputFormat<LongWritable, DoubleWritable, NullWritable> {
  @Override
  public TextVertexWriter createVertexWriter(TaskAttemptContext context) {
    return new Writer();
  }

  /** Writes one vertex as one line. */
  public class Writer extends TextVertexWriterToEachLine {
    @Override
    protected Text convertVertexToLine(Vertex<LongWritable, DoubleWritable, NullWritable> v) {
      return new Text(v.getId().get() + "\t" + Double.toHexString(v.getValue().get()));
    }
  }
}
