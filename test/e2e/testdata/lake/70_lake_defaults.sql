-- Defaults in the lake (schemas/TYPES.md, "Defaults in the lake"): rows that exist when a column is
-- added with a literal DEFAULT must read it in Iceberg as MariaDB returns it. The producer's value
-- schema must carry the default; ingest backfills it (v2 tables). Expression defaults
-- (CURRENT_TIMESTAMP, (1 + 1)) are left out: MariaDB evaluates them at the ALTER, and no event carries
-- the result (TestLakeDefaultsDebezium covers them). Read by TestLakeRealWorld only.
-- ingest-env: INGEST_BACKFILL_DEFAULTS=true
CREATE TABLE ld_keyed (id INT NOT NULL PRIMARY KEY, v VARCHAR(10)) DEFAULT CHARSET=utf8mb4;
INSERT INTO ld_keyed VALUES (1, 'a'), (2, 'b'), (3, 'c');
DELETE FROM ld_keyed WHERE id = 3;
ALTER TABLE ld_keyed ADD COLUMN s VARCHAR(32) DEFAULT 'dflt', ADD COLUMN n INT NOT NULL DEFAULT -5, ADD COLUMN big BIGINT DEFAULT -9000000000, ADD COLUMN f DOUBLE DEFAULT 1e3, ADD COLUMN tm TIME DEFAULT '12:34:56', ADD COLUMN dd DATE DEFAULT '2020-01-02', ADD COLUMN d DECIMAL(5,2) DEFAULT 1.50, ADD COLUMN dt DATETIME(6) DEFAULT '2020-01-02 03:04:05.123456', ADD COLUMN nul VARCHAR(5) DEFAULT NULL, ADD COLUMN e ENUM('x','y') DEFAULT 'y', ADD COLUMN u VARCHAR(8) DEFAULT 'ünï😀';
INSERT INTO ld_keyed (id, v) VALUES (4, 'd');
UPDATE ld_keyed SET v = 'B' WHERE id = 2;
ALTER TABLE ld_keyed ALTER COLUMN s SET DEFAULT 'later';
INSERT INTO ld_keyed (id) VALUES (5);
CREATE TABLE ld_log (a INT, b VARCHAR(5));
INSERT INTO ld_log VALUES (1, 'x'), (1, 'x'), (2, NULL);
ALTER TABLE ld_log ADD COLUMN c VARCHAR(8) DEFAULT 'dflt';
INSERT INTO ld_log (a) VALUES (3);
