package org.cloudhpc.peers.giraph;

import java.util.ArrayList;
import java.util.List;
import org.apache.giraph.aggregators.DoubleSumAggregator;
import org.apache.giraph.master.DefaultMasterCompute;

/**
 * Registers the dangling-rank aggregator and notes when each superstep starts (the master
 * computes once before every superstep), so the runner can report seconds per superstep.
 * The master runs in the runner's JVM in local mode, so the times are read from here.
 */
public class PageRankMaster extends DefaultMasterCompute {
  static final List<Long> STARTS = new ArrayList<>();

  @Override
  public void initialize() throws InstantiationException, IllegalAccessException {
    registerAggregator(PageRankComputation.DANGLING, DoubleSumAggregator.class);
  }

  @Override
  public void compute() {
    synchronized (STARTS) {
      STARTS.add(System.nanoTime());
    }
  }
}
