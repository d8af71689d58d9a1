package io.cohort.javaclients;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.kafka.common.utils.internals.Exit;

/**
 * One of Kafka's command-line tools, run by its main class as its bin/*.sh script runs it, but
 * in this JVM: its stdout and stderr captured, and its {@code Exit.exit(code)} (Kafka's tools
 * never call System.exit directly) turned into the command's exit code. Tools run one at a
 * time, since System.out is one per JVM.
 */
final class Tools {
    private static final Object ONE_AT_A_TIME = new Object();

    /** What a tool's Exit.exit throws to unwind its main. */
    private static final class Exited extends RuntimeException {
        final int code;

        Exited(int code) {
            super(null, null, false, false);
            this.code = code;
        }
    }

    private Tools() { }

    static void run(String id, String mainClass, List<String> args) throws Exception {
        Method main = Class.forName(mainClass).getMethod("main", String[].class);
        synchronized (ONE_AT_A_TIME) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            PrintStream savedOut = System.out;
            PrintStream savedErr = System.err;
            int code = 0;
            long began = System.nanoTime();
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            Exit.setExitProcedure((status, message) -> { throw new Exited(status); });
            try {
                main.invoke(null, (Object) args.toArray(new String[0]));
            } catch (InvocationTargetException e) {
                if (e.getCause() instanceof Exited exited) {
                    code = exited.code;
                } else {
                    code = 1;
                    e.getCause().printStackTrace(System.err);
                }
            } finally {
                Exit.resetExitProcedure();
                System.out.flush();
                System.err.flush();
                System.setOut(savedOut);
                System.setErr(savedErr);
            }
            Out.event(id, "tool", "exit", code,
                      "stdout", out.toString(StandardCharsets.UTF_8),
                      "stderr", err.toString(StandardCharsets.UTF_8),
                      "ms", (System.nanoTime() - began) / 1_000_000);
        }
    }
}
