package org.cloudhpc.peers.mapreduce;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.IntWritable;
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
 * k-means (Lloyd) as seed 000 ran it on Hadoop: one MapReduce job per iteration. Each job
 * re-reads the points (text, one point per line) from the file system; the centers of the
 * previous iteration reach every map task through the job's configuration. A map task assigns
 * each of its points to the nearest center (squared distance summed over the dimensions in
 * order, ties to the lower index, as cloudhpc's kernel) and emits, per center, the partial sums
 * and count of its points (in-mapper combining, emitted at the end of the task); one reduce
 * task adds the partials. The driver turns the sums into the next centers (a center that lost
 * all its points stays where it was) and starts the next job.
 */
public final class KMeans {
  static final String CENTERS = "cloudhpc.kmeans.centers";
  static final String DIMS = "cloudhpc.kmeans.d";

  private KMeans() {}

  public static class AssignMapper
      extends Mapper<LongWritable, Text, IntWritable, VectorWritable> {
    private double[][] centers;
    private double[][] sums;
    private int d;

    @Override
    protected void setup(Context context) {
      Configuration conf = context.getConfiguration();
      d = conf.getInt(DIMS, -1);
      double[] flat = Codec.split(conf.get(CENTERS));
      int k = flat.length / d;
      centers = new double[k][d];
      sums = new double[k][d + 1];
      for (int j = 0; j < k; j++) {
        System.arraycopy(flat, j * d, centers[j], 0, d);
      }
    }

    @Override
    protected void map(LongWritable offset, Text line, Context context) throws IOException {
      double[] x = Codec.fields(line.toString());
      if (x.length == 0) {
        return;
      }
      if (x.length != d) {
        throw new IOException("a point with " + x.length + " coordinates, not " + d);
      }
      int best = 0;
      double bestD2 = Double.POSITIVE_INFINITY;
      for (int j = 0; j < centers.length; j++) {
        double s = 0.0;
        for (int t = 0; t < d; t++) {
          double diff = x[t] - centers[j][t];
          s += diff * diff;
        }
        if (s < bestD2) {
          bestD2 = s;
          best = j;
        }
      }
      double[] row = sums[best];
      for (int t = 0; t < d; t++) {
        row[t] += x[t];
      }
      row[d] += 1.0;
    }

    @Override
    protected void cleanup(Context context) throws IOException, InterruptedException {
      for (int j = 0; j < sums.length; j++) {
        if (sums[j][d] > 0) {
          context.write(new IntWritable(j), new VectorWritable(sums[j]));
        }
      }
    }
  }

  public static class SumReducer
      extends Reducer<IntWritable, VectorWritable, IntWritable, VectorWritable> {
    @Override
    protected void reduce(IntWritable center, Iterable<VectorWritable> partials, Context context)
        throws IOException, InterruptedException {
      double[] total = null;
      for (VectorWritable p : partials) {
        double[] v = p.get();
        if (total == null) {
          total = new double[v.length];
        }
        for (int i = 0; i < v.length; i++) {
          total[i] += v[i];
        }
      }
      context.write(center, new VectorWritable(total));
    }
  }

  /** The result of a whole run: final centers and each iteration's job wall time. */
  static final class Result {
    double[][] centers;
    List<Double> iterationSeconds = new ArrayList<>();
  }

  /** Runs `iterations` jobs over the points under `input` on the file system of `conf`. */
  static Result run(Configuration conf, Path input, Path work, double[][] centers,
      int iterations, int reduces) throws Exception {
    FileSystem fs = input.getFileSystem(conf);
    int k = centers.length;
    int d = centers[0].length;
    Result result = new Result();
    for (int it = 0; it < iterations; it++) {
      long t0 = System.nanoTime();
      Configuration jc = new Configuration(conf);
      double[] flat = new double[k * d];
      for (int j = 0; j < k; j++) {
        System.arraycopy(centers[j], 0, flat, j * d, d);
      }
      jc.set(CENTERS, Codec.join(flat));
      jc.setInt(DIMS, d);
      Job job = Job.getInstance(jc, "cloudhpc-peer kmeans iteration " + (it + 1));
      job.setJarByClass(KMeans.class);
      job.setMapperClass(AssignMapper.class);
      job.setReducerClass(SumReducer.class);
      job.setNumReduceTasks(reduces);
      job.setOutputKeyClass(IntWritable.class);
      job.setOutputValueClass(VectorWritable.class);
      job.setInputFormatClass(TextInputFormat.class);
      job.setOutputFormatClass(TextOutputFormat.class);
      FileInputFormat.addInputPath(job, input);
      Path out = new Path(work, "kmeans-it" + (it + 1));
      fs.delete(out, true);
      FileOutputFormat.setOutputPath(job, out);
      if (!job.waitForCompletion(false)) {
        throw new IOException("kmeans iteration " + (it + 1) + " failed: " + job.getStatus());
      }
      double[][] sums = readSums(fs, out, k, d);
      double[][] next = new double[k][];
      for (int j = 0; j < k; j++) {
        next[j] = centers[j].clone();
        if (sums[j] != null && sums[j][d] > 0) {
          for (int t = 0; t < d; t++) {
            next[j][t] = sums[j][t] / sums[j][d];
          }
        }
      }
      centers = next;
      fs.delete(out, true);
      result.iterationSeconds.add((System.nanoTime() - t0) / 1e9);
    }
    result.centers = centers;
    return result;
  }

  private static double[][] readSums(FileSystem fs, Path out, int k, int d) throws IOException {
    double[][] sums = new double[k][];
    for (FileStatus st : fs.listStatus(out)) {
      if (!st.getPath().getName().startsWith("part-")) {
        continue;
      }
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(fs.open(st.getPath()), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          String[] kv = line.split("\t");
          sums[Integer.parseInt(kv[0])] = Codec.split(kv[1]);
        }
      }
    }
    return sums;
  }
}
