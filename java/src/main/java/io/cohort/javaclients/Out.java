package io.cohort.javaclients;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.Map;

/**
 * The driver's only way to say something: one JSON object per line on the process's real
 * stdout (file descriptor 1, whatever {@code System.out} has been swapped for while a tool runs).
 * Lines from many threads never interleave.
 */
final class Out {
    private static final PrintStream STDOUT =
        new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);

    private Out() { }

    /** Print {@code {"id": id, "event": event, k1: v1, ...}}: keys and values alternate. */
    static void event(String id, String event, Object... keysAndValues) {
        StringBuilder line = new StringBuilder("{\"id\":");
        quote(line, id);
        line.append(",\"event\":");
        quote(line, event);
        for (int i = 0; i + 1 < keysAndValues.length; i += 2) {
            line.append(',');
            quote(line, String.valueOf(keysAndValues[i]));
            line.append(':');
            value(line, keysAndValues[i + 1]);
        }
        line.append('}');
        synchronized (STDOUT) {
            STDOUT.println(line);
        }
    }

    private static void value(StringBuilder out, Object v) {
        if (v == null) {
            out.append("null");
        } else if (v instanceof Number || v instanceof Boolean) {
            out.append(v);
        } else if (v instanceof Map<?, ?> map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!first) out.append(',');
                first = false;
                quote(out, String.valueOf(e.getKey()));
                out.append(':');
                value(out, e.getValue());
            }
            out.append('}');
        } else if (v instanceof Collection<?> items) {
            out.append('[');
            boolean first = true;
            for (Object item : items) {
                if (!first) out.append(',');
                first = false;
                value(out, item);
            }
            out.append(']');
        } else {
            quote(out, v.toString());
        }
    }

    private static void quote(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                    else out.append(c);
                }
            }
        }
        out.append('"');
    }
}
