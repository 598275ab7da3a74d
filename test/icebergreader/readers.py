# The Python test readers of package icebergreader: pyiceberg, DuckDB and
# Apache Spark, each reading whole Iceberg tables through its own engine
# (the REST catalog and S3 from the BINLAKE_* and AWS_* variables), and one
# renderer that prints each row as the Java reference reader does
# (java/src/main/java/io/binlake/reader/ReadTable.java): a JSON object of
# column name -> canonical string, or null.
#
# Usage: python readers.py <pyiceberg|duckdb|spark>. Serves like the Java
# reader's --serve: one table name (namespace.table) per stdin line, answered
# by its rows (JSON lines) and a line END, or a line ERROR <message as a JSON
# string>. A line "METADATA <location of a metadata.json>" reads the table
# that file describes, with no catalog (pyiceberg's StaticTable, DuckDB's
# iceberg_scan; a file-system warehouse such as ingest's embedded catalog's).
# A test reader, never shipped.
import decimal
import json
import math
import os
import struct
import sys
import uuid


def main():
    reader = sys.argv[1]
    # The protocol gets its own descriptor; anything else written to stdout
    # (the Spark JVM inherits it) goes to stderr.
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    scan, static = {"pyiceberg": pyiceberg_reader, "duckdb": duckdb_reader, "spark": spark_reader}[reader]()
    for line in sys.stdin:
        ident = line.rstrip("\n")
        if not ident:
            continue
        try:
            if ident.startswith("METADATA "):
                if static is None:
                    raise ValueError("the %s reader reads tables through the catalog only" % reader)
                tbl = static(ident[len("METADATA "):])
            else:
                ns, _, name = ident.rpartition(".")
                tbl = scan(ns, name)
            out = [json.dumps(row, ensure_ascii=False) + "\n" for row in render(tbl)]
            proto.write("".join(out) + "END\n")
        except Exception as e:  # the table was not readable: say why, serve on
            proto.write("ERROR " + json.dumps("%s: %s" % (type(e).__name__, e), ensure_ascii=False) + "\n")
        proto.flush()


# ---------------------------------------------------------------- readers
# Each returns (scan, static): scan(namespace, table) -> pyarrow.Table of
# every column, static(metadata location) the same for the table of a
# metadata file (None: not supported).


def pyiceberg_reader():
    from pyiceberg.catalog import load_catalog
    from pyiceberg.table import StaticTable

    cats = []  # the REST catalog, made on the first read through it

    def scan(ns, name):
        if not cats:
            cats.append(load_catalog("rest", **{
                "type": "rest",
                "uri": os.environ["BINLAKE_ICEBERG_URI"],
                "s3.endpoint": os.environ["BINLAKE_S3_ENDPOINT"],
                "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
                "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"],
                "s3.region": os.environ["AWS_REGION"],
            }))
        return cats[0].load_table((ns, name)).scan().to_arrow()

    return scan, lambda location: StaticTable.from_metadata(location).scan().to_arrow()


def duckdb_reader():
    # DuckDB cannot download extensions here: stack.sh installs the packaged
    # ones from PyPI, loaded by path, avro and httpfs before iceberg.
    import glob
    import site
    import urllib.parse

    import duckdb

    con = duckdb.connect()
    exts = []
    for d in site.getsitepackages():
        exts += glob.glob(os.path.join(d, "duckdb_extension_*", "extensions", "*", "*.duckdb_extension"))
    if len(exts) != 3:
        sys.exit("want the iceberg, avro and httpfs extensions, found %s" % exts)
    for e in sorted(exts, key=lambda p: os.path.basename(p).startswith("iceberg")):
        con.execute("LOAD '%s'" % e)
    ep = urllib.parse.urlparse(os.environ["BINLAKE_S3_ENDPOINT"])
    con.execute("CREATE SECRET s3 (TYPE s3, KEY_ID ?, SECRET ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL ?, REGION ?)",
                [os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"], ep.netloc,
                 ep.scheme == "https", os.environ["AWS_REGION"]])
    q = lambda n: '"' + n.replace('"', '""') + '"'

    def scan(ns, name):
        # Attached again for every read: a table is loaded from the catalog
        # afresh, as the other readers load it.
        con.execute("DETACH DATABASE IF EXISTS ice")
        con.execute("ATTACH 'warehouse' AS ice (TYPE iceberg, ENDPOINT ?, AUTHORIZATION_TYPE 'none')",
                    [os.environ["BINLAKE_ICEBERG_URI"]])
        return con.execute("SELECT * FROM ice.%s.%s" % (q(ns), q(name))).to_arrow_table()

    def static(location):
        return con.execute("SELECT * FROM iceberg_scan(?)", [location]).to_arrow_table()

    return scan, static


def spark_reader():
    # Local mode, one session for the process; the Iceberg runtime and AWS
    # bundle jars come from test/icebergreader/spark (BINLAKE_SPARK_JARS).
    from pyspark.sql import SparkSession

    c = "spark.sql.catalog.ice"
    b = (SparkSession.builder.master("local[2]").appName("binlake-test-reader")
         # On the JVM class path rather than spark.jars: no copies to serve.
         .config("spark.driver.extraClassPath", os.environ["BINLAKE_SPARK_JARS"].replace(",", os.pathsep))
         # Short reads of small tables: the quick JIT tier is enough.
         .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.memory", "1g")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.shuffle.partitions", "2")
         .config(c, "org.apache.iceberg.spark.SparkCatalog")
         .config(c + ".type", "rest")
         .config(c + ".uri", os.environ["BINLAKE_ICEBERG_URI"])
         # Loaded from the catalog for every read, as the other readers do.
         .config(c + ".cache-enabled", "false")
         .config(c + ".io-impl", "org.apache.iceberg.aws.s3.S3FileIO")
         .config(c + ".s3.endpoint", os.environ["BINLAKE_S3_ENDPOINT"])
         .config(c + ".s3.path-style-access", "true")
         .config(c + ".s3.access-key-id", os.environ["AWS_ACCESS_KEY_ID"])
         .config(c + ".s3.secret-access-key", os.environ["AWS_SECRET_ACCESS_KEY"])
         .config(c + ".client.region", os.environ["AWS_REGION"]))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    q = lambda n: "`" + n.replace("`", "``") + "`"
    return (lambda ns, name: spark.table("ice.%s.%s" % (q(ns), q(name))).toArrow()), None


# ---------------------------------------------------------------- rendering


def render(tbl):
    """Yields each row of a pyarrow.Table as {column: canonical string or None}."""
    names = tbl.column_names
    if len(set(names)) != len(names):
        raise ValueError("duplicate column names %s" % names)
    cols = [strings(tbl.column(i).combine_chunks()) for i in range(len(names))]
    for r in range(tbl.num_rows):
        yield {n: cols[i][r] for i, n in enumerate(names)}


def strings(arr):
    """The canonical strings (None for NULL) of a pyarrow.Array, by its type."""
    import pyarrow as pa
    import pyarrow.types as pt

    t = arr.type
    if pt.is_dictionary(t):
        return strings(arr.dictionary_decode())
    if isinstance(t, pa.ExtensionType):
        if getattr(t, "extension_name", "") == "arrow.uuid":
            return [None if v is None else str(uuid.UUID(bytes=v)) for v in arr.storage.to_pylist()]
        raise TypeError("no canonical form for arrow type %s" % t)
    if pt.is_struct(t):
        # {name=value,...} in field order, a NULL field as NULL.
        fields = [(t.field(j).name, strings(arr.field(j))) for j in range(t.num_fields)]
        valid = arr.is_valid().to_pylist()
        return [None if not valid[i] else
                "{" + ",".join("%s=%s" % (n, "NULL" if v[i] is None else v[i]) for n, v in fields) + "}"
                for i in range(len(arr))]
    vals = lambda: arr.to_pylist()
    if pt.is_boolean(t):
        return [None if v is None else ("true" if v else "false") for v in vals()]
    if pt.is_integer(t):
        return [None if v is None else str(v) for v in vals()]
    if pt.is_float32(t):
        return [None if v is None else java_float(v, 32) for v in vals()]
    if pt.is_float64(t):
        return [None if v is None else java_float(v, 64) for v in vals()]
    if pt.is_decimal(t):
        # Plain, with exactly the scale's fraction digits (BigDecimal.toPlainString).
        return [None if v is None else plain(v, t.scale) for v in vals()]
    if pt.is_string(t) or pt.is_large_string(t) or pt.is_string_view(t):
        return vals()
    if pt.is_binary(t) or pt.is_large_binary(t) or pt.is_fixed_size_binary(t) or pt.is_binary_view(t):
        return [None if v is None else v.hex() for v in vals()]
    if pt.is_date32(t):
        return [None if v is None else date_text(v) for v in arr.cast(pa.int32()).to_pylist()]
    if pt.is_date64(t):
        return [None if v is None else date_text(v // 86_400_000) for v in arr.cast(pa.int64()).to_pylist()]
    if pt.is_timestamp(t):
        # UTC whatever the zone: the instant's (or the local value's) fields.
        per = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": None}[t.unit]
        out = []
        for v in arr.cast(pa.int64()).to_pylist():
            if v is None:
                out.append(None)
                continue
            us = v // 1000 if per is None else v * per
            days, rem = divmod(us, 86_400_000_000)
            out.append(date_text(days) + " " + clock(rem // 1_000_000) + ".%06d" % (rem % 1_000_000))
        return out
    if pt.is_time(t):
        per = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[t.unit]
        return [None if v is None else local_time(v * per)
                for v in arr.cast(pa.int64() if pt.is_time64(t) else pa.int32()).to_pylist()]
    raise TypeError("no canonical form for arrow type %s" % t)


def java_float(v, bits):
    """Java's Float.toString or Double.toString of v, from the shortest digits."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if math.copysign(1, v) < 0 else "0.0"
    if bits == 32:
        # The shortest decimal that reads back as the same float32.
        f32 = lambda x: struct.unpack("f", struct.pack("f", x))[0]
        s = next(s for s in ("%.*e" % (p, v) for p in range(9)) if f32(float(s)) == v)
    else:
        s = repr(v)
    sign, digits, exp = decimal.Decimal(s).as_tuple()
    ds = "".join(map(str, digits))
    e = exp + len(ds) - 1  # the decimal exponent of the first digit
    ds = ds.rstrip("0") or "0"
    neg = "-" if sign else ""
    # Plain for 1e-3 <= |v| < 1e7, else d.dddE[-]n; a fraction digit at least.
    if -3 <= e < 7:
        if e >= 0:
            ip, fp = ds[:e + 1].ljust(e + 1, "0"), ds[e + 1:]
        else:
            ip, fp = "0", "0" * (-e - 1) + ds
        return neg + ip + "." + (fp or "0")
    return neg + ds[0] + "." + (ds[1:] or "0") + "E" + str(e)


def plain(v, scale):
    q = v.quantize(decimal.Decimal(1).scaleb(-scale)) if v.as_tuple().exponent != -scale else v
    return format(q, "f")


def civil(days):
    """Year, month, day of days since 1970-01-01, proleptic Gregorian, any year."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if m <= 2 else 0), m, d


def date_text(days):
    # Java's year: four digits at least, '+' beyond 9999, '-' before year 0.
    y, m, d = civil(days)
    year = ("-%04d" % -y) if y < 0 else ("+%d" % y if y > 9999 else "%04d" % y)
    return "%s-%02d-%02d" % (year, m, d)


def clock(secs):
    return "%02d:%02d:%02d" % (secs // 3600, secs // 60 % 60, secs % 60)


def local_time(nanos):
    """Java's LocalTime.toString: HH:mm[:ss[.SSS|.SSSSSS|.SSSSSSSSS]]."""
    secs, n = divmod(nanos, 1_000_000_000)
    s = "%02d:%02d" % (secs // 3600, secs // 60 % 60)
    if secs % 60 or n:
        s += ":%02d" % (secs % 60)
        if n % 1_000_000 == 0 and n:
            s += ".%03d" % (n // 1_000_000)
        elif n % 1_000 == 0 and n:
            s += ".%06d" % (n // 1_000)
        elif n:
            s += ".%09d" % n
    return s


if __name__ == "__main__":
    main()
