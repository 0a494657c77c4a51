package org.cloudhpc.peers.giraph;

import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.giraph.conf.GiraphConfiguration;
import org.apache.giraph.conf.GiraphConstants;
import org.apache.giraph.combiner.DoubleSumMessageCombiner;
import org.apache.giraph.io.formats.GiraphFileInputFormat;
import org.apache.giraph.job.GiraphJob;
import org.apache.giraph.zk.InProcessZooKeeperRunner;
import org.apache.giraph.zk.ZookeeperConfig;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;

/**
 * Runs the PageRank computation on Giraph in Hadoop's local mode (LocalJobRunner) with an
 * in-process ZooKeeper, as Giraph's own InternalVertexRunner does, on an adjacency-list file.
 *
 * <p>Usage: Runner --graph FILE --iterations I --damping D --threads T --work DIR --out FILE.
 * Giraph refuses more than one worker on the LocalJobRunner ("only 1 task at a time"), so the
 * parallelism is T compute (and input) threads in the one worker.
 * Writes "id TAB value" per vertex (hexadecimal doubles) to FILE, whole or not at all, and prints
 * one JSON line: the job's seconds and each superstep's seconds (from the master's clock).
 */
public final class Runner {
  private Runner() {}

  public static void main(String[] args) throws Exception {
    String graph = null;
    String work = null;
    String out = null;
    int iterations = 20;
    int threads = 1;
    String damping = "0.85";
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--graph": graph = args[++i]; break;
        case "--work": work = args[++i]; break;
        case "--out": out = args[++i]; break;
        case "--iterations": iterations = Integer.parseInt(args[++i]); break;
        case "--threads": threads = Integer.parseInt(args[++i]); break;
        case "--damping": damping = args[++i]; break;
        default: throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (graph == null || work == null || out == null) {
      System.err.println("usage: Runner --graph FILE --iterations I --damping D --threads T "
          + "--work DIR --out FILE");
      System.exit(2);
    }
    int rc = 0;
    try {
      run(new File(graph).getAbsoluteFile(), new File(work).getAbsoluteFile(),
          new File(out).getAbsoluteFile(), iterations, damping, threads);
    } catch (Throwable t) {
      System.err.println("giraph peer failed: " + t);
      t.printStackTrace();
      rc = 1;
    }
    System.exit(rc); // ZooKeeper and Netty leave non-daemon threads behind
  }

  static void run(File graph, File work, File out, int iterations, String damping, int threads)
      throws Exception {
    work.mkdirs();
    File outputDir = new File(work, "output");
    File zkDir = new File(work, "zk");
    File zkMgrDir = new File(work, "zk-manager");
    File checkpoints = new File(work, "checkpoints");
    File mrLocal = new File(work, "mapred-local");

    GiraphConfiguration conf = new GiraphConfiguration();
    conf.setComputationClass(PageRankComputation.class);
    conf.setMasterComputeClass(PageRankMaster.class);
    conf.setMessageCombinerClass(DoubleSumMessageCombiner.class);
    conf.setVertexInputFormatClass(AdjacencyInputFormat.class);
    conf.setVertexOutputFormatClass(HexValueOutputFormat.class);
    conf.setInt(PageRankComputation.ITERATIONS, iterations);
    conf.set(PageRankComputation.DAMPING, damping);
    conf.setWorkerConfiguration(1, 1, 100.0f);
    GiraphConstants.NUM_COMPUTE_THREADS.set(conf, threads);
    GiraphConstants.NUM_INPUT_THREADS.set(conf, threads);
    GiraphConstants.NUM_OUTPUT_THREADS.set(conf, threads);
    GiraphConstants.SPLIT_MASTER_WORKER.set(conf, false);
    GiraphConstants.LOCAL_TEST_MODE.set(conf, true);
    GiraphConstants.LOG_LEVEL.set(conf, "warn");
    conf.set("mapred.job.tracker", "local");
    conf.set("mapreduce.framework.name", "local");
    conf.set("mapred.local.dir", mrLocal.getPath());
    conf.set("hadoop.tmp.dir", new File(work, "hadoop-tmp").getPath());
    conf.set("mapreduce.jobtracker.staging.root.dir", new File(work, "staging").getPath());
    conf.set(GiraphConstants.ZOOKEEPER_DIR, zkDir.getPath());
    GiraphConstants.ZOOKEEPER_MANAGER_DIRECTORY.set(conf, zkMgrDir.getPath());
    GiraphConstants.CHECKPOINT_DIRECTORY.set(conf, checkpoints.getPath());

    GiraphJob job = new GiraphJob(conf, "cloudhpc-peer giraph pagerank");
    GiraphFileInputFormat.setVertexInputPath(job.getInternalJob().getConfiguration(),
        new Path(graph.toURI()));
    FileOutputFormat.setOutputPath(job.getInternalJob(), new Path(outputDir.toURI()));

    ZookeeperConfig zk = new ZookeeperConfig();
    zk.setMaxSessionTimeout(100000);
    zk.setMinSessionTimeout(10000);
    zk.setClientPortAddress(new InetSocketAddress("localhost", 0));
    zk.setDataDir(zkDir.getPath());
    InProcessZooKeeperRunner.ZooKeeperServerRunner zookeeper =
        new InProcessZooKeeperRunner.ZooKeeperServerRunner();
    int port = zookeeper.start(zk);
    GiraphConstants.ZOOKEEPER_LIST.set(job.getConfiguration(), "localhost:" + port);
    long t0 = System.nanoTime();
    boolean ok;
    try {
      ok = job.run(false);
    } finally {
      zookeeper.stop();
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    if (!ok) {
      throw new IOException("the Giraph job failed");
    }
    List<Double> supersteps = new ArrayList<>();
    synchronized (PageRankMaster.STARTS) {
      List<Long> s = PageRankMaster.STARTS;
      for (int i = 0; i + 1 < s.size(); i++) {
        supersteps.add((s.get(i + 1) - s.get(i)) / 1e9);
      }
    }
    File tmp = new File(out.getParentFile(), "." + out.getName() + ".tmp");
    try (PrintWriter w = new PrintWriter(tmp, StandardCharsets.UTF_8)) {
      File[] parts = outputDir.listFiles((dir, name) -> name.startsWith("part-"));
      if (parts == null || parts.length == 0) {
        throw new IOException("the Giraph job wrote no output in " + outputDir);
      }
      for (File part : parts) {
        for (String line : Files.readAllLines(part.toPath(), StandardCharsets.UTF_8)) {
          w.println(line);
        }
      }
    }
    Files.move(tmp.toPath(), out.toPath(), StandardCopyOption.ATOMIC_MOVE,
        StandardCopyOption.REPLACE_EXISTING);
    StringBuilder b = new StringBuilder();
    for (double s : supersteps) {
      b.append(b.length() > 0 ? ", " : "").append(String.format(Locale.ROOT, "%.6f", s));
    }
    System.out.println(String.format(Locale.ROOT,
        "{\"job\": \"pagerank\", \"seconds\": %.6f, \"threads\": %d, \"superstep_s\": [%s], "
        + "\"java\": \"%s\"}", seconds, threads, b, System.getProperty("java.version")));
    System.out.flush();
  }
}
