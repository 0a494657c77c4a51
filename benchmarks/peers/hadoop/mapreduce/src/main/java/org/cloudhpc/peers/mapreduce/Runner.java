package org.cloudhpc.peers.mapreduce;

import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster;

/**
 * Runs the peer jobs listed in a jobs file, in Hadoop's local mode (LocalJobRunner, local file
 * system, 2 map slots) or on a pseudo-distributed cluster started in this JVM (MiniDFSCluster
 * with one DataNode + MiniMRYarnCluster with one NodeManager sized for the MapReduce
 * ApplicationMaster and 2 task containers). Mini mode copies each job's inputs into HDFS first
 * (timed apart as upload_s), as a Hadoop user would.
 *
 * <p>Usage: Runner --mode local|mini --work DIR JOBS. Each line of JOBS is one job, its fields
 * separated by tabs: the kind, then key=value settings:
 * <pre>
 * kmeans  name=N points=DIR centers=FILE iterations=I out=FILE
 * hist    name=N input=DIR columns=0[,1] edges=FILE out=FILE   (edges: one axis per line)
 * files   name=N list=FILE out=DIR arg=WORD arg=WORD ...        ({input} {name} in the words)
 * </pre>
 * Prints one JSON line per job (and one for the cluster's start) on standard output; results
 * go to the out files (doubles as hexadecimal literals), each written whole or not at all.
 */
public final class Runner {
  private Runner() {}

  public static void main(String[] args) throws Exception {
    String mode = null;
    String work = null;
    String jobs = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--mode": mode = args[++i]; break;
        case "--work": work = args[++i]; break;
        default: jobs = args[i];
      }
    }
    if (mode == null || work == null || jobs == null
        || !(mode.equals("local") || mode.equals("mini"))) {
      System.err.println("usage: Runner --mode local|mini --work DIR JOBS");
      System.exit(2);
    }
    List<String[]> lines = new ArrayList<>();
    for (String line : Files.readAllLines(new File(jobs).toPath(), StandardCharsets.UTF_8)) {
      if (!line.isBlank()) {
        lines.add(line.split("\t"));
      }
    }
    File workDir = new File(work).getAbsoluteFile();
    workDir.mkdirs();
    // the mini clusters' own directories (GenericTestUtils.getTestDir) go under the work dir
    System.setProperty("test.build.data", new File(workDir, "test-data").getPath());
    System.setProperty("hadoop.log.dir", new File(workDir, "logs").getPath());
    Cluster cluster = new Cluster();
    int rc = 0;
    try {
      if (mode.equals("local")) {
        cluster.startLocal(workDir);
      } else {
        cluster.startMini(workDir);
      }
      emit("cluster", "start", map("mode", mode, "start_s", cluster.startSeconds));
      for (String[] fields : lines) {
        runJob(cluster, fields);
      }
    } catch (Throwable t) {
      System.err.println("hadoop peer failed: " + t);
      t.printStackTrace();
      rc = 1;
    } finally {
      try {
        cluster.close();
      } catch (Throwable t) {
        System.err.println("stopping the cluster: " + t);
      }
    }
    // the mini clusters leave non-daemon threads behind: end the JVM here
    System.exit(rc);
  }

  private static void runJob(Cluster c, String[] fields) throws Exception {
    String kind = fields[0];
    Map<String, String> kv = new LinkedHashMap<>();
    List<String> words = new ArrayList<>();
    for (int i = 1; i < fields.length; i++) {
      int eq = fields[i].indexOf('=');
      String key = fields[i].substring(0, eq);
      String value = fields[i].substring(eq + 1);
      if (key.equals("arg")) {
        words.add(value);
      } else {
        kv.put(key, value);
      }
    }
    String name = kv.getOrDefault("name", kind);
    switch (kind) {
      case "kmeans": {
        long t0 = System.nanoTime();
        Path input = c.input(kv.get("points"));
        double upload = (System.nanoTime() - t0) / 1e9;
        double[][] centers = readRows(kv.get("centers"));
        int iterations = Integer.parseInt(kv.get("iterations"));
        long t1 = System.nanoTime();
        KMeans.Result r = KMeans.run(c.conf, input, c.scratch("kmeans"), centers, iterations, 1);
        double seconds = (System.nanoTime() - t1) / 1e9;
        writeRows(kv.get("out"), r.centers);
        emit(kind, name, map("seconds", seconds, "upload_s", upload,
            "iteration_s", r.iterationSeconds, "iterations", iterations));
        break;
      }
      case "hist": {
        long t0 = System.nanoTime();
        Path input = c.input(kv.get("input"));
        double upload = (System.nanoTime() - t0) / 1e9;
        String[] cols = kv.get("columns").split(",");
        int[] columns = new int[cols.length];
        for (int a = 0; a < cols.length; a++) {
          columns[a] = Integer.parseInt(cols[a]);
        }
        double[][] edges = readRows(kv.get("edges"));
        long t1 = System.nanoTime();
        long[] counts = Histogram.run(c.conf, input, c.scratch("hist"), columns, edges, 1);
        double seconds = (System.nanoTime() - t1) / 1e9;
        writeAtomic(kv.get("out"), out -> {
          for (long n : counts) {
            out.println(n);
          }
        });
        emit(kind, name, map("seconds", seconds, "upload_s", upload));
        break;
      }
      case "files": {
        long t0 = System.nanoTime();
        Path list = c.input(kv.get("list"));
        double upload = (System.nanoTime() - t0) / 1e9;
        long t1 = System.nanoTime();
        MapOnly.run(c.conf, list, words, new File(kv.get("out")).getAbsolutePath());
        double seconds = (System.nanoTime() - t1) / 1e9;
        emit(kind, name, map("seconds", seconds, "upload_s", upload));
        break;
      }
      default:
        throw new IllegalArgumentException("unknown job kind " + kind);
    }
  }

  /** The file system and configuration jobs run with, and how to bring inputs into it. */
  static final class Cluster implements AutoCloseable {
    Configuration conf;
    FileSystem fs;
    File work;
    double startSeconds;
    MiniDFSCluster dfs;
    MiniMRYarnCluster yarn;
    int uploads;

    void startLocal(File work) throws IOException {
      Cluster c = this;
      long t0 = System.nanoTime();
      c.work = work;
      Configuration conf = new Configuration();
      conf.set("mapreduce.framework.name", "local");
      conf.set("fs.defaultFS", "file:///");
      conf.set("hadoop.tmp.dir", new File(work, "hadoop-tmp").getPath());
      conf.set("mapreduce.jobtracker.staging.root.dir", new File(work, "staging").getPath());
      conf.setInt("mapreduce.local.map.tasks.maximum", 2); // 2 map slots, as in mini mode
      conf.setInt("mapreduce.local.reduce.tasks.maximum", 1);
      common(conf);
      c.conf = conf;
      c.fs = FileSystem.getLocal(conf);
      c.startSeconds = (System.nanoTime() - t0) / 1e9;
    }

    void startMini(File work) throws IOException {
      Cluster c = this;
      long t0 = System.nanoTime();
      c.work = work;
      Configuration conf = new Configuration();
      conf.set("hadoop.tmp.dir", new File(work, "hadoop-tmp").getPath());
      conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(work, "dfs").getPath());
      conf.setInt("dfs.replication", 1);
      c.dfs = new MiniDFSCluster.Builder(conf).numDataNodes(1).format(true).build();
      c.dfs.waitActive();
      conf.set("fs.defaultFS", c.dfs.getFileSystem().getUri().toString());
      // One NodeManager with room for the ApplicationMaster and 2 task containers: 2 slots.
      int am = 768;
      int task = 768;
      conf.setInt("yarn.nodemanager.resource.memory-mb", am + 2 * task);
      conf.setInt("yarn.nodemanager.resource.cpu-vcores", 3);
      conf.setInt("yarn.scheduler.minimum-allocation-mb", 256);
      conf.setInt("yarn.app.mapreduce.am.resource.mb", am);
      conf.setInt("mapreduce.map.memory.mb", task);
      conf.setInt("mapreduce.reduce.memory.mb", task);
      // the ApplicationMaster and tasks are JVMs too: they get this JVM's --add-opens flags
      String opens = String.join(" ", moduleFlags());
      conf.set("yarn.app.mapreduce.am.command-opts", "-Xmx512m " + opens);
      conf.set("mapreduce.map.java.opts", "-Xmx512m " + opens);
      conf.set("mapreduce.reduce.java.opts", "-Xmx512m " + opens);
      conf.setBoolean("yarn.nodemanager.vmem-check-enabled", false);
      conf.setBoolean("yarn.nodemanager.pmem-check-enabled", false);
      // the containers run on this machine: they get this JVM's classpath (jars in the local
      // Maven repository and this module's jar) instead of an installed Hadoop's
      String cp = System.getProperty("java.class.path").replace(File.pathSeparatorChar, ',');
      conf.set("yarn.application.classpath", cp);
      conf.set("mapreduce.application.classpath", cp);
      common(conf);
      c.yarn = new MiniMRYarnCluster("cloudhpc-peers", 1);
      c.yarn.init(conf);
      c.yarn.start();
      c.conf = new Configuration(c.yarn.getConfig());
      c.fs = FileSystem.get(c.conf);
      c.startSeconds = (System.nanoTime() - t0) / 1e9;
    }

    /** This JVM's --add-opens/--add-exports flags (Java 17 refuses Hadoop's reflection
     *  into java.base without them). */
    static List<String> moduleFlags() {
      List<String> flags = new ArrayList<>();
      for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
        if (a.startsWith("--add-opens") || a.startsWith("--add-exports")) {
          flags.add(a);
        }
      }
      return flags;
    }

    private static void common(Configuration conf) {
      // one split per input file (the generator writes one file per map task)
      conf.setLong("mapreduce.input.fileinputformat.split.minsize", Long.MAX_VALUE);
      conf.setFloat("mapreduce.job.reduce.slowstart.completedmaps", 1.0f);
      // the client asks whether the job is done every 5 s by default, which would round every
      // short iteration up to 5 s: ask every 50 ms (a user running iterative jobs would)
      conf.setInt("mapreduce.client.completion.pollinterval", 50);
    }

    /** The input as jobs see it: the local path in local mode, a copy in HDFS in mini mode. */
    Path input(String local) throws IOException {
      Path src = new Path(new File(local).getAbsoluteFile().toURI());
      if (dfs == null) {
        return src;
      }
      Path dst = new Path("/inputs/" + (uploads++) + "-" + new File(local).getName());
      fs.copyFromLocalFile(false, true, src, dst);
      return fs.makeQualified(dst);
    }

    Path scratch(String what) throws IOException {
      Path p = dfs == null ? new Path(new File(work, "scratch-" + what).toURI())
          : new Path("/scratch-" + what);
      return fs.makeQualified(p);
    }

    @Override
    public void close() throws Exception {
      if (yarn != null) {
        yarn.stop();
      }
      if (dfs != null) {
        dfs.shutdown();
      }
    }
  }

  static double[][] readRows(String path) throws IOException {
    List<double[]> rows = new ArrayList<>();
    for (String line : Files.readAllLines(new File(path).toPath(), StandardCharsets.UTF_8)) {
      if (!line.isBlank()) {
        rows.add(Codec.fields(line));
      }
    }
    return rows.toArray(new double[0][]);
  }

  static void writeRows(String path, double[][] rows) throws IOException {
    writeAtomic(path, out -> {
      for (double[] row : rows) {
        out.println(Codec.join(row).replace(',', ' '));
      }
    });
  }

  interface Body {
    void write(PrintWriter out) throws IOException;
  }

  /** A result file whole or not at all: written under a hidden name, then renamed. */
  static void writeAtomic(String path, Body body) throws IOException {
    File target = new File(path).getAbsoluteFile();
    File tmp = new File(target.getParentFile(), "." + target.getName() + ".tmp");
    try (PrintWriter out = new PrintWriter(tmp, StandardCharsets.UTF_8)) {
      body.write(out);
    }
    Files.move(tmp.toPath(), target.toPath(), StandardCopyOption.ATOMIC_MOVE,
        StandardCopyOption.REPLACE_EXISTING);
  }

  static Map<String, Object> map(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    return m;
  }

  /** One JSON line on standard output (what the Python side reads). */
  static void emit(String job, String name, Map<String, Object> fields) {
    StringBuilder b = new StringBuilder("{\"job\": \"").append(job).append("\", \"name\": \"")
        .append(name).append('"');
    for (Map.Entry<String, Object> e : fields.entrySet()) {
      b.append(", \"").append(e.getKey()).append("\": ").append(json(e.getValue()));
    }
    System.out.println(b.append('}'));
    System.out.flush();
  }

  private static String json(Object v) {
    if (v instanceof Double) {
      return String.format(Locale.ROOT, "%.6f", (Double) v);
    }
    if (v instanceof List) {
      StringBuilder b = new StringBuilder("[");
      for (Object o : (List<?>) v) {
        b.append(b.length() > 1 ? ", " : "").append(json(o));
      }
      return b.append(']').toString();
    }
    if (v instanceof Number || v instanceof Boolean) {
      return v.toString();
    }
    return "\"" + v.toString().replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }
}
