package org.fluss.py.flink.source;

import java.io.Serializable;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Locale;

/** {@code scan.startup.mode}: full (log tables: = earliest) | earliest | latest | timestamp. */
public final class StartupMode implements Serializable {
    private static final long serialVersionUID = 1L;

    public enum Kind { FULL, EARLIEST, LATEST, TIMESTAMP }

    public final Kind kind;
    public final long timestampMs;

    private StartupMode(Kind kind, long timestampMs) {
        this.kind = kind;
        this.timestampMs = timestampMs;
    }

    public static StartupMode earliest() {
        return new StartupMode(Kind.EARLIEST, 0L);
    }

    /**
     * @throws IllegalArgumentException naming the option when the mode or the timestamp is malformed
     */
    public static StartupMode parse(String mode, String timestamp, ZoneId zone) {
        Kind kind;
        try {
            kind = Kind.valueOf(mode.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("Invalid value '" + mode + "' for option 'scan.startup.mode': use "
                    + "full, earliest, latest or timestamp");
        }
        if (kind != Kind.TIMESTAMP) {
            return new StartupMode(kind, 0L);
        }
        if (timestamp == null || timestamp.isBlank()) {
            throw new IllegalArgumentException("Option 'scan.startup.timestamp' is required when "
                    + "'scan.startup.mode' is 'timestamp'");
        }
        String t = timestamp.trim();
        try {
            return new StartupMode(kind, Long.parseLong(t));
        } catch (NumberFormatException ignored) {
            // not epoch millis
        }
        try {
            LocalDateTime ldt = LocalDateTime.parse(t, DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss"));
            return new StartupMode(kind, ldt.atZone(zone).toInstant().toEpochMilli());
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException("Invalid value '" + timestamp + "' for option "
                    + "'scan.startup.timestamp': use epoch milliseconds or 'yyyy-MM-dd HH:mm:ss'");
        }
    }

    @Override
    public String toString() {
        return kind == Kind.TIMESTAMP ? "timestamp(" + timestampMs + ")" : kind.name().toLowerCase(Locale.ROOT);
    }
}
