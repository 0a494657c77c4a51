package org.cloudhpc.peers.giraph;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.giraph.edge.Edge;
import org.apache.giraph.edge.EdgeFactory;
import org.apache.giraph.io.formats.TextVertexInputFormat;
import org.apache.hadoop.io.DoubleWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.TaskAttemptContext;

/** One vertex per line: its id, then the ids its out-edges go to (repeated for parallel
 *  edges), separated by spaces or tabs. Every vertex 0..V-1 has a line, also those without
 *  edges, so that the vertex count is V. */
public class AdjacencyInputFormat
    extends TextVertexInputFormat<LongWritable, DoubleWritable, NullWritable> {
  private static final Pattern SEPARATOR = Pattern.compile("[\t ]+");

  @Override
  public TextVertexReader createVertexReader(InputSplit split, TaskAttemptContext context) {
    return new Reader();
  }

  /** Reads one line into a vertex. */
  public class Reader extends TextVertexReaderFromEachLineProcessed<String[]> {
    @Override
    protected String[] preprocessLine(Text line) {
      return SEPARATOR.split(line.toString().trim());
    }

    @Override
    protected LongWritable getId(String[] tokens) {
      return new LongWritable(Long.parseLong(tokens[0]));
    }

    @Override
    protected DoubleWritable getValue(String[] tokens) {
      return new DoubleWritable(0.0);
    }

    @Override
    protected Iterable<Edge<LongWritable, NullWritable>> getEdges(String[] tokens)
        throws IOException {
      List<Edge<LongWritable, NullWritable>> edges = new ArrayList<>(tokens.length - 1);
      for (int i = 1; i < tokens.length; i++) {
        edges.add(EdgeFactory.create(new LongWritable(Long.parseLong(tokens[i]))));
      }
      return edges;
    }
  }
}
