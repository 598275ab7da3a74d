package io.binlake.reader;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;

/**
 * Prints every live row of an Iceberg table as one JSON object per line, values as
 * canonical strings (timestamps as UTC "yyyy-MM-dd HH:mm:ss.SSSSSS", decimals plain,
 * binary as hex, structs as {name=value,...}), read with iceberg-data's generic reader, which applies equality
 * and position deletes. Usage: ReadTable namespace.table, or ReadTable --serve (table names on
 * stdin, see main; "COUNT
 * namespace.table" answers with the number of rows only); the catalog comes from the environment.
 * A request "METADATA <location of a metadata.json>" reads the table that file describes, with no
 * catalog (a file-system warehouse such as ingest's embedded catalog's, read through Hadoop's
 * file systems).
 */
public final class ReadTable {
  // uuuu, the proleptic year: yyyy is the year of the era, which prints year 0 (1 BC) as 0001.
  private static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss.SSSSSS");

  /** The REST catalog of the environment, made on the first request that names a table. */
  private static RESTCatalog catalog;

  private static RESTCatalog catalog() {
    if (catalog != null) return catalog;
    Map<String, String> props = new HashMap<>();
    props.put("uri", System.getenv("BINLAKE_ICEBERG_URI"));
    props.put("io-impl", "org.apache.iceberg.aws.s3.S3FileIO");
    props.put("s3.endpoint", System.getenv("BINLAKE_S3_ENDPOINT"));
    props.put("s3.path-style-access", "true");
    props.put("s3.access-key-id", System.getenv("AWS_ACCESS_KEY_ID"));
    props.put("s3.secret-access-key", System.getenv("AWS_SECRET_ACCESS_KEY"));
    props.put("client.region", System.getenv("AWS_REGION"));
    RESTCatalog c = new RESTCatalog();
    c.initialize("reader", props);
    catalog = c;
    return catalog;
  }

  /** A serve-mode request "METADATA <location>": the table of that metadata file, no catalog. */
  private static final String METADATA = "METADATA ";

  /** load returns the table a request names: "namespace.table", or METADATA and a location. */
  private static Table load(String request) {
    if (request.startsWith(METADATA)) {
      String location = request.substring(METADATA.length());
      HadoopFileIO io = new HadoopFileIO(new org.apache.hadoop.conf.Configuration());
      return new BaseTable(new StaticTableOperations(location, io), location);
    }
    return catalog().loadTable(TableIdentifier.parse(request));
  }

  public static void main(String[] args) throws Exception {
    try {
      PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
      if (!args[0].equals("--serve")) {
        print(load(args[0]), out);
        out.flush();
        return;
      }
      // Serve mode: one table name per stdin line; its rows, then a line
      // "END", or a line "ERROR <message as a JSON string>"; for a line
      // "COUNT <table>", a line "ROWS <n>" then "END". The table is
      // loaded from the catalog again for every request.
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line; (line = in.readLine()) != null; ) {
        if (line.isEmpty()) continue;
        try {
          if (line.startsWith(COUNT)) {
            out.println("ROWS " + count(load(line.substring(COUNT.length()))));
          } else {
            print(load(line), out);
          }
          out.println("END");
        } catch (Exception e) {
          StringBuilder msg = new StringBuilder("ERROR ");
          quote(msg, e.toString());
          out.println(msg);
        }
        out.flush();
      }
    } finally {
      if (catalog != null) catalog.close();
    }
  }

  /** A serve-mode request "COUNT ns.table": read every row, answer only their number. */
  private static final String COUNT = "COUNT ";

  /**
   * count reads every live row of the table as print does (every column decoded, deletes
   * applied) without rendering them, so that a benchmark times the reader, not the printing.
   */
  private static long count(Table table) throws Exception {
    List<Types.NestedField> fields = table.schema().columns();
    long n = 0, nulls = 0;
    try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
      for (Record r : rows) {
        for (int i = 0; i < fields.size(); i++) {
          if (r.get(i) == null) nulls++;
        }
        n++;
      }
    }
    return nulls < 0 ? -1 : n; // nulls is used so that the field reads are not dropped
  }

  private static void print(Table table, PrintStream sink) throws Exception {
    List<Types.NestedField> fields = table.schema().columns();
    StringBuilder out = new StringBuilder();
    try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
      for (Record r : rows) {
        out.setLength(0);
        out.append('{');
        for (int i = 0; i < fields.size(); i++) {
          if (i > 0) out.append(',');
          quote(out, fields.get(i).name());
          out.append(':');
          Object v = r.getField(fields.get(i).name());
          if (v == null) {
            out.append("null");
          } else {
            quote(out, render(v));
          }
        }
        out.append('}');
        sink.println(out);
      }
    }
  }

  private static String render(Object v) {
    if (v instanceof BigDecimal d) return d.toPlainString();
    if (v instanceof Record r) {
      // A struct (e.g. a geometry): {name=value,...} in field order, null as NULL.
      StringBuilder s = new StringBuilder("{");
      List<Types.NestedField> fs = r.struct().fields();
      for (int i = 0; i < fs.size(); i++) {
        if (i > 0) s.append(',');
        Object f = r.getField(fs.get(i).name());
        s.append(fs.get(i).name()).append('=').append(f == null ? "NULL" : render(f));
      }
      return s.append('}').toString();
    }
    if (v instanceof LocalDateTime t) return TS.format(t);
    if (v instanceof OffsetDateTime t) return TS.format(t.withOffsetSameInstant(ZoneOffset.UTC).toLocalDateTime());
    if (v instanceof LocalDate d) return d.toString();
    if (v instanceof LocalTime t) return t.toString();
    if (v instanceof ByteBuffer b) {
      StringBuilder s = new StringBuilder();
      ByteBuffer d = b.duplicate();
      while (d.hasRemaining()) s.append(String.format("%02x", d.get() & 0xff));
      return s.toString();
    }
    if (v instanceof byte[] a) {
      StringBuilder s = new StringBuilder();
      for (byte x : a) s.append(String.format("%02x", x & 0xff));
      return s.toString();
    }
    return String.valueOf(v);
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
