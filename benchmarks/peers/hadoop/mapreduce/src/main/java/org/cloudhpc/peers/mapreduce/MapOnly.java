package org.cloudhpc.peers.mapreduce;

import java.io.File;
import java.io.IOException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.lib.input.NLineInputFormat;
import org.apache.hadoop.mapreduce.lib.output.NullOutputFormat;

/**
 * Map-only file processing, as seed 000 ran CAP3 on Hadoop (section 12.4.1): the input is a
 * list of file paths, one map task per line (NLineInputFormat), each map runs the program on its
 * file as a separate process and moves its standard output into a shared output directory as
 * NAME.stdout (written under a hidden name, then renamed: whole or not at all); zero reduce
 * tasks. The command's words are given with {input} and {name} in place of the file.
 */
public final class MapOnly {
  static final String COMMAND = "cloudhpc.files.command"; // URL-encoded words, space-separated
  static final String OUT = "cloudhpc.files.out";

  private MapOnly() {}

  public static class RunMapper extends Mapper<LongWritable, Text, NullWritable, NullWritable> {
    @Override
    protected void map(LongWritable offset, Text line, Context context)
        throws IOException, InterruptedException {
      String input = line.toString().trim();
      if (input.isEmpty()) {
        return;
      }
      Configuration conf = context.getConfiguration();
      String name = new File(input).getName();
      List<String> argv = new ArrayList<>();
      for (String w : conf.get(COMMAND).split(" ")) {
        String word = URLDecoder.decode(w, StandardCharsets.UTF_8);
        argv.add(word.replace("{input}", input).replace("{name}", name));
      }
      File outDir = new File(conf.get(OUT));
      File tmp = new File(outDir, "." + name + ".stdout.tmp");
      File err = new File(outDir, "." + name + ".stderr.tmp");
      Process p = new ProcessBuilder(argv)
          .redirectOutput(tmp)
          .redirectError(err)
          .start();
      int rc = p.waitFor();
      if (rc != 0) {
        String msg = new String(Files.readAllBytes(err.toPath())).trim();
        tmp.delete();
        err.delete();
        throw new IOException(String.join(" ", argv) + " exited " + rc + ": " + msg);
      }
      err.delete();
      Files.move(tmp.toPath(), new File(outDir, name + ".stdout").toPath(),
          StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      context.progress();
    }
  }

  static void run(Configuration conf, Path list, List<String> command, String outDir)
      throws Exception {
    Configuration jc = new Configuration(conf);
    List<String> encoded = new ArrayList<>();
    for (String w : command) {
      encoded.add(URLEncoder.encode(w, StandardCharsets.UTF_8));
    }
    jc.set(COMMAND, String.join(" ", encoded));
    jc.set(OUT, outDir);
    Job job = Job.getInstance(jc, "cloudhpc-peer map-only files");
    job.setJarByClass(MapOnly.class);
    job.setMapperClass(RunMapper.class);
    job.setNumReduceTasks(0);
    job.setInputFormatClass(NLineInputFormat.class);
    NLineInputFormat.addInputPath(job, list);
    NLineInputFormat.setNumLinesPerSplit(job, 1);
    job.setOutputFormatClass(NullOutputFormat.class);
    job.setOutputKeyClass(NullWritable.class);
    job.setOutputValueClass(NullWritable.class);
    if (!job.waitForCompletion(false)) {
      throw new IOException("map-only job failed: " + job.getStatus());
    }
  }
}
