-- Column defaults after each DDL form (CREATE, ADD, MODIFY, CHANGE, ALTER ... SET/DROP DEFAULT,
-- expression defaults), with rows before and after each; and the key Debezium's table model gives
-- tables without a primary key: unique keys of NOT NULL columns, nullable unique keys, a nullable
-- column declared UNIQUE, several unique keys, SERIAL, keyless tables, unique keys added later by
-- ALTER TABLE and CREATE UNIQUE INDEX, and a unique index dropped later.
-- ingest-env: INGEST_BACKFILL_DEFAULTS=true
-- lake-allow: kd_defaults c2 a column renamed by CHANGE c c2 is a new column to ingest (Debezium's row schema carries no column rename, and ingest does not follow column renames from the schema-change topic yet): rows written before the CHANGE keep their value in column c, and c2 reads its default (README, ingest, Not yet)
-- lake-allow: kd_defaults x an expression default (DEFAULT (2 * 3)) has no value in the Avro schema (Debezium writes none), so rows written before its ADD COLUMN read NULL in the lake (TYPES.md, Defaults in the lake)
-- lake-allow: kd_defaults t2 CURRENT_TIMESTAMP is evaluated by MariaDB at the ALTER; no producer carries that instant, so rows written before its ADD COLUMN read NULL in the lake (TYPES.md, Defaults in the lake)
-- lake-allow: kd_defaults dt6 NOW(6) is evaluated by MariaDB at the ALTER; no producer carries that instant, so rows written before its ADD COLUMN read NULL in the lake (TYPES.md, Defaults in the lake)
-- lake-allow: kd_defaults l an expression default (LOWER('AB')) has no value in the Avro schema, so rows written before its ADD COLUMN read NULL in the lake (TYPES.md, Defaults in the lake)
-- allow: kd_defaults valueschema.fields[0].type[1].fields[10].default Debezium writes the default 'it''s' as the text between the quotes, it''s (DefaultValueParserListener.unquote keeps the doubled quote); capture writes the default MariaDB stores, it's
-- allow: kd_defaults valueschema.fields[0].type[1].fields[10].type[0].connect.default Debezium writes the default 'it''s' as the text between the quotes, it''s; capture writes the default MariaDB stores, it's
-- allow: kd_defaults valueschema.fields[0].type[1].fields[15].default a BIGINT UNSIGNED default above 2^63-1 (bigint.unsigned.handling.mode=long): Debezium saturates it to 9223372036854775807 while it wraps the column's values (2^64-1 becomes -1); capture wraps both, so the default is what a row with that value reads
-- allow: kd_defaults valueschema.fields[0].type[1].fields[15].type[0].connect.default a BIGINT UNSIGNED default above 2^63-1: Debezium saturates it, capture wraps it as it wraps the values
CREATE TABLE kd_defaults (id INT NOT NULL PRIMARY KEY, a VARCHAR(10) DEFAULT 'x', n INT NOT NULL DEFAULT -5, e INT DEFAULT (1 + 1), ts TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), dt DATETIME DEFAULT NOW(), d DECIMAL(5,2) DEFAULT 1.5, b BIT(3) DEFAULT b'101', en ENUM('a','b') DEFAULT 'b', bo BOOLEAN DEFAULT TRUE, q VARCHAR(10) DEFAULT 'it''s', dd DATE DEFAULT '2020-01-02', tm TIME DEFAULT '12:34:56', y YEAR DEFAULT 2024, f DOUBLE DEFAULT 1e3, u BIGINT UNSIGNED DEFAULT 18446744073709551615, vb VARBINARY(4) DEFAULT 0x41);
INSERT INTO kd_defaults (id) VALUES (1);
ALTER TABLE kd_defaults ADD COLUMN c VARCHAR(32) DEFAULT 'dflt';
INSERT INTO kd_defaults (id) VALUES (2);
ALTER TABLE kd_defaults MODIFY c VARCHAR(32) DEFAULT 'modified';
INSERT INTO kd_defaults (id) VALUES (3);
ALTER TABLE kd_defaults CHANGE c c2 VARCHAR(40) NOT NULL DEFAULT 'changed';
INSERT INTO kd_defaults (id) VALUES (4);
ALTER TABLE kd_defaults ALTER COLUMN c2 SET DEFAULT 'set';
INSERT INTO kd_defaults (id) VALUES (5);
ALTER TABLE kd_defaults ALTER COLUMN c2 DROP DEFAULT;
INSERT INTO kd_defaults (id, c2) VALUES (6, 'given');
ALTER TABLE kd_defaults ADD COLUMN x INT DEFAULT (2 * 3), ADD COLUMN t2 TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, ADD COLUMN dt6 DATETIME(6) DEFAULT NOW(6), ADD COLUMN l VARCHAR(5) DEFAULT LOWER('AB');
INSERT INTO kd_defaults (id, c2) VALUES (7, 'g');
CREATE TABLE kd_uniq_nn (id INT NOT NULL, u VARCHAR(10) NOT NULL, v INT, UNIQUE KEY uk_u (u));
INSERT INTO kd_uniq_nn VALUES (1, 'a', 1), (2, 'b', 2);
UPDATE kd_uniq_nn SET v = 3 WHERE u = 'a';
UPDATE kd_uniq_nn SET u = 'c' WHERE u = 'b';
DELETE FROM kd_uniq_nn WHERE u = 'a';
CREATE TABLE kd_uniq_null (id INT NOT NULL, u INT NULL, UNIQUE KEY (u));
INSERT INTO kd_uniq_null VALUES (1, NULL), (2, 5);
CREATE TABLE kd_col_uniq_null (id INT NOT NULL, u INT NULL UNIQUE);
INSERT INTO kd_col_uniq_null VALUES (1, NULL), (2, 5);
DELETE FROM kd_col_uniq_null WHERE id = 1;
CREATE TABLE kd_two_uniq (a INT NOT NULL, b INT NOT NULL, c INT NULL, UNIQUE KEY uc (c), UNIQUE KEY ub (b), UNIQUE KEY ua (a));
INSERT INTO kd_two_uniq VALUES (1, 10, NULL), (2, 20, 200);
CREATE TABLE kd_composite (a INT NOT NULL, b VARCHAR(5) NOT NULL, v INT, UNIQUE KEY (b, a));
INSERT INTO kd_composite VALUES (1, 'x', 1);
CREATE TABLE kd_serial (id SERIAL, v INT);
INSERT INTO kd_serial (v) VALUES (1), (2);
CREATE TABLE kd_serial_dv (id INT SERIAL DEFAULT VALUE, v INT);
INSERT INTO kd_serial_dv (v) VALUES (1);
CREATE TABLE kd_keyless (a INT, b VARCHAR(5));
INSERT INTO kd_keyless VALUES (1, 'x');
DELETE FROM kd_keyless;
CREATE TABLE kd_later (a INT NOT NULL, b INT NOT NULL, c INT);
INSERT INTO kd_later VALUES (1, 1, 1);
ALTER TABLE kd_later ADD UNIQUE KEY ub (b);
INSERT INTO kd_later VALUES (2, 2, 2);
CREATE UNIQUE INDEX ua ON kd_later (a);
INSERT INTO kd_later VALUES (3, 3, 3);
DROP INDEX ub ON kd_later;
INSERT INTO kd_later VALUES (4, 4, 4);
CREATE TABLE kd_cidx (a INT NOT NULL, b INT);
INSERT INTO kd_cidx VALUES (0, 0);
CREATE UNIQUE INDEX ua ON kd_cidx (a);
INSERT INTO kd_cidx VALUES (1, 1);
ALTER TABLE kd_cidx COMMENT 'keyed from here';
INSERT INTO kd_cidx VALUES (2, 2);
CREATE INDEX ib ON kd_cidx (b);
DROP INDEX ib ON kd_cidx;
CREATE TABLE kd_addcol (a INT);
ALTER TABLE kd_addcol ADD COLUMN k INT NOT NULL UNIQUE;
INSERT INTO kd_addcol VALUES (1, 1);
CREATE TABLE kd_pk_uniq (id INT NOT NULL, u INT NOT NULL UNIQUE, PRIMARY KEY (id));
INSERT INTO kd_pk_uniq VALUES (1, 1);
