package org.cloudhpc.peers.mapreduce;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.TextInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.TextOutputFormat;

/**
 * The HEP histogram (seed 000 section 12.4.2) as a Hadoop MapReduce job: map fills a partial
 * histogram of its split's events (one event per text line, whitespace-separated branches),
 * emitted at the end of the task as (flat bin, count) for its non-empty bins; the combiner and
 * the reducer add counts per bin. The bins are numpy.histogram's: the edges come from the
 * driver (exact doubles), bin i holds edges[i] <= x < edges[i+1], the last bin also holds the
 * top edge, values outside the range and NaN are not counted. Two columns make a 2-D histogram
 * (flat bin = i * ny + j, numpy's C order).
 */
public final class Histogram {
  static final String COLUMNS = "cloudhpc.hist.columns";
  static final String EDGES = "cloudhpc.hist.edges."; // + axis

  private Histogram() {}

  /** The bin of x on one axis, or -1 when x is outside [edges[0], edges[last]] or NaN. */
  static int bin(double[] edges, double x) {
    int nb = edges.length - 1;
    if (!(x >= edges[0] && x <= edges[nb])) {
      return -1;
    }
    if (x == edges[nb]) {
      return nb - 1;
    }
    int i = Arrays.binarySearch(edges, x);
    // found: x is an edge, its bin starts there; not found: -(insertion point) - 1
    return i >= 0 ? i : -i - 2;
  }

  public static class FillMapper extends Mapper<LongWritable, Text, LongWritable, LongWritable> {
    private int[] columns;
    private double[][] edges;
    private long[] counts;

    @Override
    protected void setup(Context context) {
      Configuration conf = context.getConfiguration();
      String[] cols = conf.get(COLUMNS).split(",");
      columns = new int[cols.length];
      edges = new double[cols.length][];
      int cells = 1;
      for (int a = 0; a < cols.length; a++) {
        columns[a] = Integer.parseInt(cols[a]);
        edges[a] = Codec.split(conf.get(EDGES + a));
        cells *= edges[a].length - 1;
      }
      counts = new long[cells];
    }

    @Override
    protected void map(LongWritable offset, Text line, Context context) {
      String text = line.toString();
      if (text.isBlank()) {
        return;
      }
      double[] event = Codec.fields(text);
      int flat = 0;
      for (int a = 0; a < columns.length; a++) {
        int b = bin(edges[a], event[columns[a]]);
        if (b < 0) {
          return;
        }
        flat = flat * (edges[a].length - 1) + b;
      }
      counts[flat]++;
    }

    @Override
    protected void cleanup(Context context) throws IOException, InterruptedException {
      for (int i = 0; i < counts.length; i++) {
        if (counts[i] > 0) {
          context.write(new LongWritable(i), new LongWritable(counts[i]));
        }
      }
    }
  }

  public static class SumReducer
      extends Reducer<LongWritable, LongWritable, LongWritable, LongWritable> {
    @Override
    protected void reduce(LongWritable bin, Iterable<LongWritable> counts, Context context)
        throws IOException, InterruptedException {
      long total = 0;
      for (LongWritable c : counts) {
        total += c.get();
      }
      context.write(bin, new LongWritable(total));
    }
  }

  /** Runs the job; returns the dense counts (flat, C order). */
  static long[] run(Configuration conf, Path input, Path work, int[] columns, double[][] edges,
      int reduces) throws Exception {
    Configuration jc = new Configuration(conf);
    StringBuilder cols = new StringBuilder();
    int cells = 1;
    for (int a = 0; a < columns.length; a++) {
      cols.append(a > 0 ? "," : "").append(columns[a]);
      jc.set(EDGES + a, Codec.join(edges[a]));
      cells *= edges[a].length - 1;
    }
    jc.set(COLUMNS, cols.toString());
    Job job = Job.getInstance(jc, "cloudhpc-peer hep histogram");
    job.setJarByClass(Histogram.class);
    job.setMapperClass(FillMapper.class);
    job.setCombinerClass(SumReducer.class);
    job.setReducerClass(SumReducer.class);
    job.setNumReduceTasks(reduces);
    job.setOutputKeyClass(LongWritable.class);
    job.setOutputValueClass(LongWritable.class);
    job.setInputFormatClass(TextInputFormat.class);
    job.setOutputFormatClass(TextOutputFormat.class);
    FileInputFormat.addInputPath(job, input);
    FileSystem fs = input.getFileSystem(conf);
    Path out = new Path(work, "hist-out");
    fs.delete(out, true);
    FileOutputFormat.setOutputPath(job, out);
    if (!job.waitForCompletion(false)) {
      throw new IOException("histogram job failed: " + job.getStatus());
    }
    long[] counts = new long[cells];
    for (FileStatus st : fs.listStatus(out)) {
      if (!st.getPath().getName().startsWith("part-")) {
        continue;
      }
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(fs.open(st.getPath()), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          String[] kv = line.split("\t");
          counts[Integer.parseInt(kv[0])] += Long.parseLong(kv[1]);
        }
      }
    }
    fs.delete(out, true);
    return counts;
  }
}
