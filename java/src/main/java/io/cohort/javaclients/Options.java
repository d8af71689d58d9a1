package io.cohort.javaclients;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/** A command's {@code key=value} arguments; {@code config.K=V} ones are client configs. */
final class Options {
    private final Map<String, String> values = new HashMap<>();
    private final Properties clientConfigs = new Properties();

    Options(List<String> tokens) {
        for (String token : tokens) {
            int eq = token.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("not key=value: " + token);
            String key = token.substring(0, eq);
            String value = token.substring(eq + 1);
            if (key.startsWith("config.")) clientConfigs.put(key.substring(7), value);
            else values.put(key, value);
        }
    }

    String get(String key) {
        String v = values.get(key);
        if (v == null) throw new IllegalArgumentException("missing " + key + "=...");
        return v;
    }

    String get(String key, String otherwise) {
        return values.getOrDefault(key, otherwise);
    }

    long getLong(String key, long otherwise) {
        String v = values.get(key);
        return v == null ? otherwise : Long.parseLong(v);
    }

    /** The client configs: {@code bootstrap.servers} from {@code bootstrap=}, then every
     * {@code config.K=V}, which may override the defaults the caller put first. */
    Properties client(Properties defaults) {
        Properties p = new Properties();
        p.putAll(defaults);
        p.put("bootstrap.servers", get("bootstrap"));
        p.putAll(clientConfigs);
        return p;
    }
}
