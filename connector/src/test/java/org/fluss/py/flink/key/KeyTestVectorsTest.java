package org.fluss.py.flink.key;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.fluss.py.flink.types.FlussTypes;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.io.File;
import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Checks the Java key encoding and bucket function against ../docs/key-test-vectors.json. */
class KeyTestVectorsTest {
    private static final File VECTORS = new File("../docs/key-test-vectors.json");

    private static JsonNode vectors() throws Exception {
        return new ObjectMapper().readTree(VECTORS);
    }

    @Test
    void murmur3MatchesThePublishedValues() throws Exception {
        JsonNode list = vectors().get("murmur3_32");
        assertTrue(list.size() > 5);
        for (JsonNode v : list) {
            byte[] data = HexFormat.of().parseHex(v.get("data_hex").asText());
            int seed = (int) v.get("seed").asLong();
            assertEquals(v.get("hash").asLong(), MurmurHash3.hash32(data, 0, data.length, seed) & 0xffffffffL,
                    "murmur3 of " + v.get("data_hex").asText() + " seed " + seed);
        }
        assertEquals(0x248bfa47, MurmurHash3.hash32("hello".getBytes()));
    }

    @TestFactory
    List<DynamicTest> keyBytesHashAndBucketsMatchEveryCase() throws Exception {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : vectors().get("cases")) {
            tests.add(DynamicTest.dynamicTest(c.get("name").asText(), () -> checkCase(c)));
        }
        assertTrue(tests.size() >= 40, "expected the full vector file");
        return tests;
    }

    private static void checkCase(JsonNode c) {
        List<LogicalType> types = new ArrayList<>();
        for (JsonNode t : c.get("types")) {
            types.add(FlussTypes.toFlink(t.asText()));
        }
        GenericRowData row = new GenericRowData(types.size());
        int[] positions = new int[types.size()];
        for (int i = 0; i < types.size(); i++) {
            positions[i] = i;
            JsonNode v = c.get("values").get(i);
            row.setField(i, v.isNull() ? null : value(types.get(i), v));
        }
        byte[] key = new KeyEncoder(types, positions).encode(row);
        assertEquals(c.get("key_hex").asText(), HexFormat.of().formatHex(key));
        assertEquals(c.get("hash").asLong(), MurmurHash3.hash32(key) & 0xffffffffL);
        Iterator<Map.Entry<String, JsonNode>> it = c.get("buckets").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            assertEquals(e.getValue().asInt(), BucketFunction.bucket(key, Integer.parseInt(e.getKey())),
                    "bucket for " + e.getKey() + " buckets");
        }
    }

    private static Object value(LogicalType t, JsonNode v) {
        switch (t.getTypeRoot()) {
            case BOOLEAN:
                return v.asBoolean();
            case TINYINT:
                return (byte) v.asInt();
            case SMALLINT:
                return (short) v.asInt();
            case INTEGER:
                return v.asInt();
            case BIGINT:
                return v.asLong();
            case FLOAT:
                return (float) number(v);
            case DOUBLE:
                return number(v);
            case CHAR:
            case VARCHAR:
                return StringData.fromString(v.asText());
            case BINARY:
            case VARBINARY:
                return HexFormat.of().parseHex(v.asText());
            case DECIMAL: {
                DecimalType d = (DecimalType) t;
                return DecimalData.fromBigDecimal(new BigDecimal(v.asText()), d.getPrecision(), d.getScale());
            }
            case DATE:
                return (int) LocalDate.parse(v.asText()).toEpochDay();
            case TIME_WITHOUT_TIME_ZONE: {
                LocalTime time = LocalTime.parse(v.asText());
                // Flink's TIME runtime value is milliseconds of the day: finer values cannot reach the encoder
                assumeTrue(time.getNano() % 1_000_000 == 0, "TIME below milliseconds is not representable in Flink");
                return (int) (time.toNanoOfDay() / 1_000_000L);
            }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                return TimestampData.fromLocalDateTime(LocalDateTime.parse(v.asText()));
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return TimestampData.fromInstant(Instant.parse(v.asText()));
            default:
                throw new IllegalArgumentException("no vector value for " + t);
        }
    }

    private static double number(JsonNode v) {
        if (v.isTextual()) {
            switch (v.asText()) {
                case "NaN":
                    return Double.NaN;
                case "Infinity":
                    return Double.POSITIVE_INFINITY;
                case "-Infinity":
                    return Double.NEGATIVE_INFINITY;
                default:
                    return Double.parseDouble(v.asText());
            }
        }
        return v.asDouble();
    }
}
