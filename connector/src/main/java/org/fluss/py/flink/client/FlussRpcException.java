package org.fluss.py.flink.client;

import org.fluss.py.rpc.ErrorInfo;

import java.util.Set;

/** A Fluss error code + message from a response's {@code ErrorInfo} (codes of {@code fluss/errors.py}). */
public class FlussRpcException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public static final int NETWORK_EXCEPTION = 1;
    public static final int DATABASE_NOT_EXIST = 4;
    public static final int DATABASE_NOT_EMPTY = 5;
    public static final int DATABASE_ALREADY_EXIST = 6;
    public static final int TABLE_NOT_EXIST = 7;
    public static final int TABLE_ALREADY_EXIST = 8;
    public static final int NOT_LEADER_OR_FOLLOWER = 12;
    public static final int LOG_OFFSET_OUT_OF_RANGE = 19;
    public static final int UNKNOWN_TABLE_OR_BUCKET = 21;
    public static final int INVALID_COORDINATOR = 23;
    public static final int PARTITION_NOT_EXISTS = 36;
    public static final int PARTITION_ALREADY_EXISTS = 42;
    public static final int AUTHENTICATE_EXCEPTION = 46;

    /** The retriable codes of fluss/errors.py (RETRIABLE_CODES). */
    private static final Set<Integer> RETRIABLE = Set.of(1, 12, 3, 21, 25, 28, 29, 44, 24, 51, 9);
    /** The leader has no batch of the writer in the bucket and the batch is not sequence 0 (errors.py). */
    public static final int UNKNOWN_WRITER_ID = 33;

    private final int code;

    public FlussRpcException(int code, String message) {
        super(message + " (Fluss error code " + code + ")");
        this.code = code;
    }

    public int code() {
        return code;
    }

    public boolean isRetriable() {
        return RETRIABLE.contains(code);
    }

    public static boolean isRetriable(int code) {
        return RETRIABLE.contains(code);
    }

    /** Throws if {@code error} carries a non-zero code; {@code what} says which request / object failed. */
    public static void check(ErrorInfo error, String what) {
        if (error != null && error.getCode() != 0) {
            throw new FlussRpcException(error.getCode(), what + ": " + error.getMessage());
        }
    }
}
