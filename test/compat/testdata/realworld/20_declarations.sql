-- Every type declaration form of the MariaDB 10.11 and MySQL 8.4 manuals' data-type chapters
-- (numeric and string types; temporal types are in 50_temporal), with values at each type's
-- limits. Each table exists twice: *_snap before both connectors start, so that both read its
-- structure from SHOW CREATE TABLE (which writes BOOLEAN as tinyint(1), REAL as double, FLOAT4
-- as float, SERIAL as bigint unsigned ... UNIQUE), and the same statement streamed after they
-- start, which Debezium's DDL parser reads as written.
-- capture-env: CAPTURE_SNAPSHOT_MODE=no_data
-- allow: decl_int valueschema.fields[0].type[1].fields[18].type[1] Debezium 3.5.0 types a streamed INTEGER UNSIGNED [ZEROFILL] as INT32 (its INT64 rule lists INT UNSIGNED and INT4 UNSIGNED, not INTEGER UNSIGNED; later Debezium lists it) and wraps values above 2^31-1; capture gives INT64 as for INT UNSIGNED
-- allow: decl_int value.after.igz Debezium 3.5.0 wraps a streamed INTEGER UNSIGNED value above 2^31-1 into INT32 (4294967295 becomes -1); capture writes 4294967295
-- allow: decl_num value.after.f4 Debezium 3.5.0 writes null for every value of a column declared FLOAT4 in streamed DDL (its schema is FLOAT64 while its converter returns a float); capture writes the value
-- before-start
CREATE TABLE decl_int_snap (k INT NOT NULL PRIMARY KEY, t TINYINT, tu TINYINT UNSIGNED, tz TINYINT(3) ZEROFILL, t1 TINYINT(1), i1 INT1, i1u INT1 UNSIGNED, s SMALLINT, su SMALLINT UNSIGNED, sz SMALLINT ZEROFILL, i2 INT2, m MEDIUMINT, mu MEDIUMINT UNSIGNED, mi MIDDLEINT, i3 INT3 UNSIGNED, i INT, iu INT UNSIGNED, ig INTEGER, igz INTEGER UNSIGNED ZEROFILL, i4 INT4, isg INT SIGNED, b BIGINT, bu BIGINT UNSIGNED, i8 INT8, i8u INT8 UNSIGNED, bo BOOLEAN, bl BOOL NOT NULL DEFAULT FALSE);
CREATE TABLE decl_num_snap (k INT NOT NULL PRIMARY KEY, d DECIMAL, d65 DECIMAL(65,30), de DEC(10,2), nu NUMERIC(20,5), fx FIXED(8,3), du DECIMAL(10,2) UNSIGNED, f FLOAT, f10 FLOAT(10), f24 FLOAT(24), f25 FLOAT(25), f53 FLOAT(53), fmd FLOAT(7,4), fu FLOAT UNSIGNED, f4 FLOAT4, f8 FLOAT8, db DOUBLE, dp DOUBLE PRECISION, dmd DOUBLE(10,3), r REAL, r2 REAL(10,2), bit1 BIT, bit5 BIT(5), bit64 BIT(64));
CREATE TABLE decl_str_snap (k INT NOT NULL PRIMARY KEY, c CHAR(5), ch CHARACTER(5), cv CHAR VARYING(10), chv CHARACTER VARYING(10), vc VARCHAR(10), nc NATIONAL CHAR(5), nch NCHAR(5), nvc NATIONAL VARCHAR(10), nv NVARCHAR(10), nchv NCHAR VARCHAR(10), ncv NATIONAL CHAR VARYING(10), nccv NATIONAL CHARACTER VARYING(10), l LONG, lv LONG VARCHAR, lvb LONG VARBINARY, tx TEXT(100), bl BLOB(100), tt TINYTEXT, mt MEDIUMTEXT, lt LONGTEXT, bn BINARY(4), vb VARBINARY(4), cb CHAR(5) BINARY, cbyte CHAR(4) BYTE, e ENUM('a','b c'), st SET('x','y'));
CREATE TABLE decl_serial_snap (id SERIAL, v INT);
-- after-start
CREATE TABLE decl_int (k INT NOT NULL PRIMARY KEY, t TINYINT, tu TINYINT UNSIGNED, tz TINYINT(3) ZEROFILL, t1 TINYINT(1), i1 INT1, i1u INT1 UNSIGNED, s SMALLINT, su SMALLINT UNSIGNED, sz SMALLINT ZEROFILL, i2 INT2, m MEDIUMINT, mu MEDIUMINT UNSIGNED, mi MIDDLEINT, i3 INT3 UNSIGNED, i INT, iu INT UNSIGNED, ig INTEGER, igz INTEGER UNSIGNED ZEROFILL, i4 INT4, isg INT SIGNED, b BIGINT, bu BIGINT UNSIGNED, i8 INT8, i8u INT8 UNSIGNED, bo BOOLEAN, bl BOOL NOT NULL DEFAULT FALSE);
CREATE TABLE decl_num (k INT NOT NULL PRIMARY KEY, d DECIMAL, d65 DECIMAL(65,30), de DEC(10,2), nu NUMERIC(20,5), fx FIXED(8,3), du DECIMAL(10,2) UNSIGNED, f FLOAT, f10 FLOAT(10), f24 FLOAT(24), f25 FLOAT(25), f53 FLOAT(53), fmd FLOAT(7,4), fu FLOAT UNSIGNED, f4 FLOAT4, f8 FLOAT8, db DOUBLE, dp DOUBLE PRECISION, dmd DOUBLE(10,3), r REAL, r2 REAL(10,2), bit1 BIT, bit5 BIT(5), bit64 BIT(64));
CREATE TABLE decl_str (k INT NOT NULL PRIMARY KEY, c CHAR(5), ch CHARACTER(5), cv CHAR VARYING(10), chv CHARACTER VARYING(10), vc VARCHAR(10), nc NATIONAL CHAR(5), nch NCHAR(5), nvc NATIONAL VARCHAR(10), nv NVARCHAR(10), nchv NCHAR VARCHAR(10), ncv NATIONAL CHAR VARYING(10), nccv NATIONAL CHARACTER VARYING(10), l LONG, lv LONG VARCHAR, lvb LONG VARBINARY, tx TEXT(100), bl BLOB(100), tt TINYTEXT, mt MEDIUMTEXT, lt LONGTEXT, bn BINARY(4), vb VARBINARY(4), cb CHAR(5) BINARY, e ENUM('a','b c'), st SET('x','y'));
CREATE TABLE decl_serial (id SERIAL, v INT);
INSERT INTO decl_int VALUES (1, -128, 0, 0, -128, -128, 0, -32768, 0, 0, -32768, -8388608, 0, -8388608, 0, -2147483648, 0, -2147483648, 0, -2147483648, -2147483648, -9223372036854775808, 0, -9223372036854775808, 0, -128, 0);
INSERT INTO decl_int VALUES (2, 127, 255, 255, 127, 127, 255, 32767, 65535, 65535, 32767, 8388607, 16777215, 8388607, 16777215, 2147483647, 4294967295, 2147483647, 4294967295, 2147483647, 2147483647, 9223372036854775807, 18446744073709551615, 9223372036854775807, 18446744073709551615, 127, 1);
INSERT INTO decl_int (k, bo, bl) VALUES (3, 1, TRUE), (4, 2, 0);
INSERT INTO decl_int_snap SELECT * FROM decl_int;
UPDATE decl_int SET bo = 0 WHERE k = 4;
UPDATE decl_int_snap SET bo = 0 WHERE k = 4;
INSERT INTO decl_num VALUES (1, -9999999999, -99999999999999999999999999999999999.999999999999999999999999999999, -99999999.99, -999999999999999.99999, -99999.999, 0, -3.40282e38, -1.17549e-38, 3.40282e38, -1.7976931348623157e308, 1.7976931348623157e308, -999.9999, 0, -1.5, -2.2250738585072014e-308, -1.7976931348623157e308, 1.7976931348623157e308, -9999999.999, -3.4e38, -99999999.99, 0, 0, 0);
INSERT INTO decl_num VALUES (2, 9999999999, 99999999999999999999999999999999999.999999999999999999999999999999, 99999999.99, 999999999999999.99999, 99999.999, 99999999.99, 3.40282e38, 1.17549e-38, 1.5, 4.9e-324, 2.5, 999.9999, 3.40282e38, 1.1, 0.1, 4.9e-324, 0.1, 9999999.999, 1.1, 99999999.99, 1, b'11111', b'1111111111111111111111111111111111111111111111111111111111111111');
INSERT INTO decl_num (k) VALUES (3);
INSERT INTO decl_num_snap SELECT * FROM decl_num;
INSERT INTO decl_str VALUES (1, 'abcde', 'é', 'ab', 'abcdefghij', 'ü', 'ñ', 'nchar', 'natvarchar', 'nvarchar', 'ncharvarch', 'ncv', 'nccv', 'long text', 'long varchar', 0x00ff, 'text', 0x0102, 'tiny', 'medium', 'long', 0x01, 0x02, 'B', 'b c', 'x,y');
INSERT INTO decl_str (k) VALUES (2);
INSERT INTO decl_str_snap (k, c, ch, cv, chv, vc, nc, nch, nvc, nv, nchv, ncv, nccv, l, lv, lvb, tx, bl, tt, mt, lt, bn, vb, cb, cbyte, e, st) SELECT k, c, ch, cv, chv, vc, nc, nch, nvc, nv, nchv, ncv, nccv, l, lv, lvb, tx, bl, tt, mt, lt, bn, vb, cb, 0x61, e, st FROM decl_str;
INSERT INTO decl_serial (v) VALUES (1), (2);
INSERT INTO decl_serial_snap (v) VALUES (1), (2);
UPDATE decl_serial SET v = 3 WHERE id = 1;
UPDATE decl_serial_snap SET v = 3 WHERE id = 1;
DELETE FROM decl_serial WHERE id = 2;
DELETE FROM decl_serial_snap WHERE id = 2;
