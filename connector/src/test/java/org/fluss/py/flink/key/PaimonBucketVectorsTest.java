package org.fluss.py.flink.key;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.paimon.codegen.CodeGenUtils;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.schema.TableSchema;
import org.apache.paimon.table.sink.FixedBucketRowKeyExtractor;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.RowType;
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
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Paimon bucketing against ../docs/paimon-bucket-test-vectors.json, and the vectors against Paimon itself: every
 * case's BinaryRow, hash and buckets are what Paimon's own Java classes compute (its code-generated bucket-key
 * projection and {@link FixedBucketRowKeyExtractor}, the extractor of Paimon's writers), and what
 * {@link PaimonKeyEncoder} computes over the Flink rows the connector routes.
 */
class PaimonBucketVectorsTest {
    private static final File VECTORS = new File("../docs/paimon-bucket-test-vectors.json");

    private static List<JsonNode> cases() throws Exception {
        List<JsonNode> out = new ArrayList<>();
        new ObjectMapper().readTree(VECTORS).get("cases").forEach(out::add);
        return out;
    }

    @TestFactory
    List<DynamicTest> paimonItselfComputesEveryVector() throws Exception {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : cases()) {
            tests.add(DynamicTest.dynamicTest(c.get("name").asText(), () -> checkWithPaimon(c)));
        }
        assertTrue(tests.size() >= 50, "expected the full vector file");
        return tests;
    }

    @TestFactory
    List<DynamicTest> connectorEncoderReproducesEveryVector() throws Exception {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : cases()) {
            tests.add(DynamicTest.dynamicTest(c.get("name").asText(), () -> checkConnector(c)));
        }
        return tests;
    }

    @Test
    void bucketingFunctionFollowsTheTableProperty() {
        List<LogicalType> types = List.of(FlussTypes.toFlink("BIGINT"));
        GenericRowData row = GenericRowData.of(42L);
        int[] key = {0};
        int paimon = BucketingFunction.of(Map.of(BucketingFunction.TABLE_PROPERTY, "paimon"), types, key)
                .bucket(row, 128);
        int byDefault = BucketingFunction.of(Map.of(), types, key).bucket(row, 128);
        assertEquals(byDefault, BucketFunction.bucket(new KeyEncoder(types, key).encode(row), 128));
        assertEquals(paimon, PaimonKeyEncoder.bucket(new PaimonKeyEncoder(types, key).encode(row), 128));
        assertTrue(paimon != byDefault, "BIGINT 42 lands in different buckets of 128 by the two functions");
    }

    // ------------------------------------------------------------------ Paimon's own classes

    private static void checkWithPaimon(JsonNode c) {
        List<DataField> fields = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        int arity = c.get("paimon_types").size();
        GenericRow row = new GenericRow(arity);
        for (int i = 0; i < arity; i++) {
            DataType type = DataTypeJsonParser.parseAtomicTypeSQLString(c.get("paimon_types").get(i).asText());
            fields.add(new DataField(i, "k" + i, type));
            keys.add("k" + i);
            JsonNode v = c.get("values").get(i);
            LogicalType fluss = FlussTypes.toFlink(c.get("types").get(i).asText());
            int flussPrecision = fluss instanceof TimestampType ts ? ts.getPrecision()
                    : fluss instanceof LocalZonedTimestampType ltz ? ltz.getPrecision() : 9;
            row.setField(i, v.isNull() ? null : paimonValue(type, v, flussPrecision));
        }
        RowType rowType = new RowType(fields);
        int[] all = new int[arity];
        for (int i = 0; i < arity; i++) {
            all[i] = i;
        }
        org.apache.paimon.data.BinaryRow binary = CodeGenUtils.newProjection(rowType, all).apply(row);
        assertEquals(c.get("row_hex").asText(), HexFormat.of().formatHex(binary.toBytes()), "BinaryRow");
        assertEquals(c.get("hash").asInt(), binary.hashCode(), "BinaryRow.hashCode");
        Iterator<Map.Entry<String, JsonNode>> it = c.get("buckets").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            Map<String, String> options = new HashMap<>();
            options.put("bucket", e.getKey());
            options.put("bucket-key", String.join(",", keys));
            FixedBucketRowKeyExtractor extractor = new FixedBucketRowKeyExtractor(
                    new TableSchema(0, fields, arity - 1, List.of(), List.of(), options, null));
            extractor.setRecord(row);
            assertEquals(e.getValue().asInt(), extractor.bucket(), "Paimon's bucket of " + e.getKey());
        }
    }

    /** A vector value as the lake table holds it (a TIMESTAMP floored to its Fluss precision, as Fluss stores it). */
    private static Object paimonValue(DataType type, JsonNode v, int flussPrecision) {
        switch (type.getTypeRoot()) {
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
                return BinaryString.fromString(v.asText());
            case BINARY:
            case VARBINARY:
                return HexFormat.of().parseHex(v.asText());
            case DECIMAL: {
                org.apache.paimon.types.DecimalType d = (org.apache.paimon.types.DecimalType) type;
                return Decimal.fromBigDecimal(new BigDecimal(v.asText()), d.getPrecision(), d.getScale());
            }
            case DATE:
                return (int) LocalDate.parse(v.asText()).toEpochDay();
            case TIME_WITHOUT_TIME_ZONE: // milliseconds of the day (finer digits are truncated, as in the lake)
                return (int) (LocalTime.parse(v.asText()).toNanoOfDay() / 1_000_000L);
            case TIMESTAMP_WITHOUT_TIME_ZONE: {
                LocalDateTime t = LocalDateTime.parse(v.asText());
                return Timestamp.fromLocalDateTime(t.withNano(floorNanos(t.getNano(), flussPrecision)));
            }
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                Instant t = Instant.parse(v.asText());
                return Timestamp.fromInstant(t.minusNanos(t.getNano() - floorNanos(t.getNano(), flussPrecision)));
            }
            default:
                throw new IllegalArgumentException("no vector value for " + type);
        }
    }

    private static int floorNanos(int nanos, int precision) {
        int step = (int) Math.pow(10, 9 - precision);
        return nanos / step * step;
    }

    // ------------------------------------------------------------------ the connector's encoder

    private static void checkConnector(JsonNode c) {
        List<LogicalType> types = new ArrayList<>();
        for (JsonNode t : c.get("types")) {
            types.add(FlussTypes.toFlink(t.asText()));
        }
        GenericRowData row = new GenericRowData(types.size());
        int[] positions = new int[types.size()];
        for (int i = 0; i < types.size(); i++) {
            positions[i] = i;
            JsonNode v = c.get("values").get(i);
            row.setField(i, v.isNull() ? null : flinkValue(types.get(i), v));
        }
        byte[] binary = new PaimonKeyEncoder(types, positions).encode(row);
        assertEquals(c.get("row_hex").asText(), HexFormat.of().formatHex(binary));
        assertEquals(c.get("hash").asInt(), PaimonKeyEncoder.hash(binary));
        Iterator<Map.Entry<String, JsonNode>> it = c.get("buckets").fields();
        Map<String, String> props = Map.of(BucketingFunction.TABLE_PROPERTY, "paimon");
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            assertEquals(e.getValue().asInt(), BucketingFunction.of(props, types, positions)
                    .bucket(row, Integer.parseInt(e.getKey())), "bucket of " + e.getKey());
        }
    }

    private static Object flinkValue(LogicalType t, JsonNode v) {
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
            case TIME_WITHOUT_TIME_ZONE: // Flink's TIME is milliseconds of the day
                return (int) (LocalTime.parse(v.asText()).toNanoOfDay() / 1_000_000L);
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
