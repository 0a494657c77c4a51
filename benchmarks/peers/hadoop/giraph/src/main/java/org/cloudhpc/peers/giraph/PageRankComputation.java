package org.cloudhpc.peers.giraph;

import java.io.IOException;
import org.apache.giraph.graph.BasicComputation;
import org.apache.giraph.graph.Vertex;
import org.apache.hadoop.io.DoubleWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;

/**
 * PageRank as cloudhpc's vertex program defines it (src/cloudhpc/apps/pagerank/program.py,
 * networkx.pagerank's definition): superstep 0 sets rank = 1/V; superstep s >= 1 sets
 * rank = (1 - d)/V + d * (dangling/V + sum of messages), where dangling is the rank of the
 * vertices without out-edges in superstep s-1 (a sum aggregator, whose value Giraph hands to the
 * next superstep); every superstep before the last sends rank * (1/out-degree) along each
 * out-edge (parallel edges each carry a message, as the app counts them); the last superstep
 * (s = iterations) votes to halt. Giraph's giraph-examples SimplePageRankComputation is not used:
 * it computes in float constants (0.15f, 0.85f) and drops the dangling vertices' rank.
 */
public class PageRankComputation
    extends BasicComputation<LongWritable, DoubleWritable, NullWritable, DoubleWritable> {
  static final String ITERATIONS = "cloudhpc.pagerank.iterations";
  static final String DAMPING = "cloudhpc.pagerank.damping";
  static final String DANGLING = "dangling";

  @Override
  public void compute(Vertex<LongWritable, DoubleWritable, NullWritable> vertex,
      Iterable<DoubleWritable> messages) throws IOException {
    long n = getTotalNumVertices();
    double d = Double.parseDouble(getConf().get(DAMPING));
    int iterations = getConf().getInt(ITERATIONS, 0);
    double rank;
    if (getSuperstep() == 0) {
      rank = 1.0 / n;
    } else {
      double sum = 0.0;
      for (DoubleWritable m : messages) {
        sum += m.get();
      }
      DoubleWritable dangling = getAggregatedValue(DANGLING);
      double base = (1 - d) / n + d * dangling.get() / n;
      rank = base + d * sum;
    }
    vertex.setValue(new DoubleWritable(rank));
    if (getSuperstep() < iterations) {
      int degree = vertex.getNumEdges();
      if (degree == 0) {
        aggregate(DANGLING, new DoubleWritable(rank));
      } else {
        sendMessageToAllEdges(vertex, new DoubleWritable(rank * (1.0 / degree)));
      }
    } else {
      vertex.voteToHalt();
    }
  }
}
