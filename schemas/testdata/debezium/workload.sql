-- The statements whose Debezium events are recorded in this folder (see README.md).
-- Run by test/debezium TestRecordGoldens on one connection, statement by statement
-- (each statement ends with ';' at the end of a line). The streaming connector is
-- started before the first statement, so every table is created while it streams.
SET time_zone = '+00:00';
CREATE DATABASE golden CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;
USE golden;

-- Integers, signed and unsigned, at their limits; TINYINT(1); NULLs.
CREATE TABLE ints (
  id INT NOT NULL PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED,
  bi BIGINT, biu BIGINT UNSIGNED, b1 TINYINT(1), nn INT NOT NULL DEFAULT 7
);
INSERT INTO ints VALUES (1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615, 1, 0);
INSERT INTO ints VALUES (2, 127, 0, 32767, 0, 8388607, 0, 2147483647, 0, 9223372036854775807, 9223372036854775808, 0, -1);
INSERT INTO ints (id) VALUES (3);

-- Fixed and floating point, bits.
CREATE TABLE nums (
  id INT NOT NULL PRIMARY KEY,
  d10 DECIMAL(10,2), d65 DECIMAL(65,30), du DECIMAL(5,0) UNSIGNED,
  f FLOAT, d DOUBLE,
  bit1 BIT(1), bit10 BIT(10), bit64 BIT(64)
);
INSERT INTO nums VALUES (1, 12345678.90, 12345678901234567890123456789012345.123456789012345678901234567890, 99999, 3.14, 2.718281828459045, b'1', b'1000000001', b'1111111111111111111111111111111111111111111111111111111111111111');
INSERT INTO nums VALUES (2, -0.01, -0.000000000000000000000000000001, 0, -1.5e-10, -1.7976931348623157e308, b'0', b'0', b'0');
INSERT INTO nums (id) VALUES (3);

-- Strings (with 4-byte UTF-8), binary strings, ENUM, SET, JSON.
CREATE TABLE strs (
  id INT NOT NULL PRIMARY KEY,
  c CHAR(10), vc VARCHAR(100), t TEXT, lt LONGTEXT,
  bn BINARY(4), vb VARBINARY(16), bl BLOB,
  e ENUM('small','medium','large') NOT NULL DEFAULT 'small',
  s SET('a','b','c'),
  j JSON
) DEFAULT CHARSET=utf8mb4;
INSERT INTO strs VALUES (1, 'abc', 'héllo wörld 😀', 'text 𝄞 music', REPEAT('x', 300), x'00010203', x'DEADBEEF', x'00FF00FF', 'large', 'a,c', '{"k": [1, 2.5, "x", null, true], "emoji": "😀"}');
INSERT INTO strs (id) VALUES (2);

-- Temporal types: fractional seconds, negative and > 24h TIME, range limits.
CREATE TABLE times (
  id INT NOT NULL PRIMARY KEY,
  d DATE, t0 TIME, t6 TIME(6), dt0 DATETIME, dt3 DATETIME(3), dt6 DATETIME(6),
  ts0 TIMESTAMP NULL, ts6 TIMESTAMP(6) NULL, y YEAR
);
INSERT INTO times VALUES (1, '2024-02-29', '23:59:59', '12:34:56.789012', '2024-02-29 23:59:59', '2024-02-29 23:59:59.123', '2024-02-29 23:59:59.123456', '2024-02-29 23:59:59', '2024-02-29 23:59:59.123456', 2024);
INSERT INTO times VALUES (2, '1000-01-01', '-838:59:59', '-01:02:03.000004', '1000-01-01 00:00:00', '9999-12-31 23:59:59.999', '1970-01-01 00:00:00.000001', '1970-01-01 00:00:01', '2038-01-19 03:14:07.999999', 1901);
INSERT INTO times VALUES (3, '1969-12-31', '838:59:59', '25:00:00.5', '1969-12-31 23:59:59', '1969-12-31 23:59:59.999', '1969-12-31 23:59:59.999999', '2000-01-01 00:00:00', '2000-01-01 00:00:00.5', 2155);
INSERT INTO times (id) VALUES (4);

-- Spatial.
CREATE TABLE geo (id INT NOT NULL PRIMARY KEY, p POINT, g GEOMETRY);
INSERT INTO geo VALUES (1, ST_GeomFromText('POINT(1.5 -2.25)'), ST_GeomFromText('LINESTRING(0 0, 1 1, 2 0)', 4326));
INSERT INTO geo (id) VALUES (2);

-- No primary key: null record keys; a multi-row insert (source.row 0 and 1).
CREATE TABLE nopk (a INT, b VARCHAR(10));
INSERT INTO nopk VALUES (1, 'x'), (2, 'y');
UPDATE nopk SET b = 'z' WHERE a = 2;
DELETE FROM nopk WHERE a = 1;

-- Update, delete (then a tombstone), primary-key update (delete + tombstone + create,
-- with __debezium.oldkey/newkey headers), a multi-statement transaction.
UPDATE ints SET ti = 0, b1 = NULL WHERE id = 3;
DELETE FROM ints WHERE id = 2;
UPDATE strs SET id = 20 WHERE id = 2;
BEGIN;
UPDATE nums SET f = 0 WHERE id = 3;
INSERT INTO nums (id, d10) VALUES (4, 0.5);
COMMIT;

-- TRUNCATE (op t: needs skipped.operations=none, the default skips it).
TRUNCATE TABLE times;

-- ALTER TABLE ADD COLUMN: a new value schema version for later events.
ALTER TABLE nums ADD COLUMN extra VARCHAR(10) DEFAULT 'dflt';
INSERT INTO nums (id) VALUES (5);
UPDATE nums SET extra = 'set' WHERE id = 1;

-- The last statement: when its event is on its topic, the connector has seen all.
CREATE TABLE marker (id INT NOT NULL PRIMARY KEY);
INSERT INTO marker VALUES (1);
