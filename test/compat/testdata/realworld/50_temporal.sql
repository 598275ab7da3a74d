-- Temporal values at every limit the MySQL 8.4 and MariaDB 10.11 manuals give ("Date and Time Data
-- Types", "Fractional Seconds", "Zero dates", "SQL_MODE", "Time zones"):
--   DATE        1000-01-01 … 9999-12-31 (MariaDB also stores 0001-01-01 … 0999-12-31)
--   DATETIME(p) 1000-01-01 00:00:00 … 9999-12-31 23:59:59.999999, p = 0…6
--   TIMESTAMP(p) 1970-01-01 00:00:01 UTC … 2038-01-19 03:14:07.999999 UTC, p = 0…6; stored as UTC and
--               shown in the session time_zone; out of range in non-strict mode → 0 (the zero value)
--   TIME(p)     -838:59:59.999999 … 838:59:59.999999, p = 0…6
--   YEAR        1901 … 2155 and 0000
-- Zero dates and parts (0000-00-00, 2020-00-15, 2020-02-00) need a sql_mode without NO_ZERO_DATE /
-- NO_ZERO_IN_DATE. Invalid days (2021-02-31, stored under ALLOW_INVALID_DATES in DATE and DATETIME) are
-- not here: Debezium 3.5 stops on them ("Error while deserializing binlog data of date: Invalid date
-- 'FEBRUARY 31'"), and so does capture, naming the column (TestInvalidDateStopsCapture).
-- Session zones run from -12:59 to +13:00 on MariaDB; the shared server has no named zones loaded
-- (capture/internal/binlog's private-server test covers named zones and DST).
-- Tables are prefixed tl_ (temporal limits): files with the same settings share one database.
--
-- allow: tl_year0 value.after.y Debezium 3.5 reads YEAR 0000 as 1900 (it adds 1900 to the binlog byte 0); MariaDB's SELECT gives 0 and capture emits 0
-- allow: tl_year0 value.before.y Debezium 3.5 reads YEAR 0000 as 1900 (it adds 1900 to the binlog byte 0); MariaDB's SELECT gives 0 and capture emits 0
-- allow: tl_year1 value.after.d Debezium's enable.time.adjuster (default true) turns year 0001 into 2001 and 0070 into 1970; MariaDB's SELECT gives the year as stored, and so does capture
-- allow: tl_year1 value.after.dt Debezium's enable.time.adjuster (default true) turns year 0001 into 2001 and 0070 into 1970; MariaDB's SELECT gives the year as stored, and so does capture
-- allow: tl_year0date value.after.d Debezium 3.5 takes year 0 for a zero date (NULL); MariaDB's SELECT gives 0000-01-01, capture emits that day
-- allow: tl_year0date value.after.dn Debezium 3.5 takes year 0 for a zero date (the epoch); MariaDB's SELECT gives 0000-12-31, capture emits that day
-- allow: tl_year0date value.after.dt Debezium 3.5 takes year 0 for a zero date (NULL); MariaDB's SELECT gives 0000-01-01 00:00:00, capture emits that instant
-- allow: tl_year0date value.after.dtn Debezium 3.5 takes year 0 for a zero date (the epoch); MariaDB's SELECT gives 0000-12-31 23:59:59.999999, capture emits that instant
SET sql_mode = 'ALLOW_INVALID_DATES';
SET time_zone = '+00:00';

CREATE TABLE tl_date (id INT PRIMARY KEY, d DATE NULL, dn DATE NOT NULL DEFAULT '1000-01-01');
INSERT INTO tl_date VALUES (1, '1000-01-01', '9999-12-31'), (2, '9999-12-31', '1000-01-01'), (3, '0100-01-01', '0100-03-01');
INSERT INTO tl_date VALUES (4, '1969-12-31', '1970-01-01'), (5, '1582-10-10', '1582-10-04'), (6, '2024-02-29', '1900-02-28');
INSERT INTO tl_date VALUES (7, '0999-12-31', '2000-02-29'), (8, NULL, '2038-01-19');
INSERT INTO tl_date (id) VALUES (9);
UPDATE tl_date SET d = '9999-12-30' WHERE id = 2;
DELETE FROM tl_date WHERE id = 7;

CREATE TABLE tl_datetime (id INT PRIMARY KEY, dt0 DATETIME NULL, dt1 DATETIME(1) NULL, dt2 DATETIME(2) NULL, dt3 DATETIME(3) NULL, dt4 DATETIME(4) NULL, dt5 DATETIME(5) NULL, dt6 DATETIME(6) NULL);
INSERT INTO tl_datetime VALUES (1, '1000-01-01 00:00:00', '1000-01-01 00:00:00.0', '1000-01-01 00:00:00.00', '1000-01-01 00:00:00.000', '1000-01-01 00:00:00.0000', '1000-01-01 00:00:00.00000', '1000-01-01 00:00:00.000000');
INSERT INTO tl_datetime VALUES (2, '9999-12-31 23:59:59', '9999-12-31 23:59:59.9', '9999-12-31 23:59:59.99', '9999-12-31 23:59:59.999', '9999-12-31 23:59:59.9999', '9999-12-31 23:59:59.99999', '9999-12-31 23:59:59.999999');
INSERT INTO tl_datetime VALUES (3, '0100-01-01 00:00:00', '0100-01-01 00:00:00.1', '0100-01-01 00:00:00.01', '0100-01-01 00:00:00.001', '0100-01-01 00:00:00.0001', '0100-01-01 00:00:00.00001', '0100-01-01 00:00:00.000001');
INSERT INTO tl_datetime VALUES (4, '1969-12-31 23:59:59', '1969-12-31 23:59:59.9', '1969-12-31 23:59:59.99', '1969-12-31 23:59:59.999', '1969-12-31 23:59:59.9999', '1969-12-31 23:59:59.99999', '1969-12-31 23:59:59.999999');
INSERT INTO tl_datetime VALUES (5, '1970-01-01 00:00:00', '1970-01-01 00:00:00.1', '1970-01-01 00:00:00.01', '1970-01-01 00:00:00.001', '1970-01-01 00:00:00.0001', '1970-01-01 00:00:00.00001', '1970-01-01 00:00:00.000001');
INSERT INTO tl_datetime VALUES (6, '2038-01-19 03:14:08', '2038-01-19 03:14:08.5', '2024-02-29 12:00:00.05', '1999-12-31 23:59:59.5', '2000-01-01 00:00:00.0005', '2000-01-01 00:00:00.00005', '1900-01-01 00:00:00.123456');
INSERT INTO tl_datetime (id) VALUES (7);
UPDATE tl_datetime SET dt6 = '9999-12-31 23:59:59.999998', dt3 = '9999-12-31 23:59:59.998' WHERE id = 2;

CREATE TABLE tl_timestamp (id INT PRIMARY KEY, ts0 TIMESTAMP NULL, ts1 TIMESTAMP(1) NULL, ts2 TIMESTAMP(2) NULL, ts3 TIMESTAMP(3) NULL, ts4 TIMESTAMP(4) NULL, ts5 TIMESTAMP(5) NULL, ts6 TIMESTAMP(6) NULL);
INSERT INTO tl_timestamp VALUES (1, '1970-01-01 00:00:01', '1970-01-01 00:00:01.0', '1970-01-01 00:00:01.00', '1970-01-01 00:00:01.000', '1970-01-01 00:00:01.0000', '1970-01-01 00:00:01.00000', '1970-01-01 00:00:01.000000');
INSERT INTO tl_timestamp VALUES (2, '2038-01-19 03:14:07', '2038-01-19 03:14:07.9', '2038-01-19 03:14:07.99', '2038-01-19 03:14:07.999', '2038-01-19 03:14:07.9999', '2038-01-19 03:14:07.99999', '2038-01-19 03:14:07.999999');
INSERT INTO tl_timestamp VALUES (3, '2000-01-01 00:00:00', '1970-01-01 00:00:01.1', '1970-01-01 00:00:01.01', '1970-01-01 00:00:01.001', '1970-01-01 00:00:01.0001', '1970-01-01 00:00:01.00001', '1970-01-01 00:00:01.000001');
-- Zero seconds with a fraction: stored as second 0 plus the fraction, read back as such (issue 17).
INSERT INTO tl_timestamp VALUES (4, '1970-01-01 00:00:01', '1970-01-01 00:00:00.9', '1970-01-01 00:00:00.99', '1970-01-01 00:00:00.999', '1970-01-01 00:00:00.9999', '1970-01-01 00:00:00.99999', '1970-01-01 00:00:00.999999');
INSERT INTO tl_timestamp VALUES (5, '1970-01-01 00:00:01', '1970-01-01 00:00:00.1', '1970-01-01 00:00:00.01', '1970-01-01 00:00:00.001', '1970-01-01 00:00:00.0001', '1970-01-01 00:00:00.00001', '1970-01-01 00:00:00.000001');
-- Out of range in non-strict mode: the zero value.
INSERT INTO tl_timestamp VALUES (6, '1970-01-01 00:00:00', '2038-01-19 03:14:08.0', '1969-12-31 23:59:59.99', '2040-01-01 00:00:00.000', '1000-01-01 00:00:00.0000', '9999-12-31 23:59:59.99999', '2038-01-19 03:14:08.000000');
INSERT INTO tl_timestamp VALUES (7, '0000-00-00 00:00:00', '0000-00-00 00:00:00.0', NULL, NULL, NULL, NULL, '0000-00-00 00:00:00.000000');
INSERT INTO tl_timestamp (id) VALUES (8);
UPDATE tl_timestamp SET ts6 = '1970-01-01 00:00:00.500000', ts0 = '2038-01-19 03:14:06' WHERE id = 2;
DELETE FROM tl_timestamp WHERE id = 5;

CREATE TABLE tl_time (id INT PRIMARY KEY, t0 TIME NULL, t1 TIME(1) NULL, t2 TIME(2) NULL, t3 TIME(3) NULL, t4 TIME(4) NULL, t5 TIME(5) NULL, t6 TIME(6) NULL);
INSERT INTO tl_time VALUES (1, '838:59:59', '838:59:59.9', '838:59:59.99', '838:59:59.999', '838:59:59.9999', '838:59:59.99999', '838:59:59.999999');
INSERT INTO tl_time VALUES (2, '-838:59:59', '-838:59:59.9', '-838:59:59.99', '-838:59:59.999', '-838:59:59.9999', '-838:59:59.99999', '-838:59:59.999999');
INSERT INTO tl_time VALUES (3, '00:00:00', '-00:00:00.1', '-00:00:00.01', '-00:00:00.001', '-00:00:00.0001', '-00:00:00.00001', '-00:00:00.000001');
INSERT INTO tl_time VALUES (4, '23:59:59', '00:00:00.1', '00:00:00.01', '00:00:00.001', '00:00:00.0001', '00:00:00.00001', '00:00:00.000001');
INSERT INTO tl_time VALUES (5, '24:00:00', '23:59:59.9', '23:59:59.99', '23:59:59.999', '23:59:59.9999', '23:59:59.99999', '23:59:59.999999');
INSERT INTO tl_time VALUES (6, '-00:00:01', '-01:00:00.5', '-24:00:00.25', '-00:59:59.999', '-12:34:56.7891', '-100:00:00.00001', '-00:00:01.000001');
-- Beyond the range in non-strict mode: clipped to the limit by the server.
INSERT INTO tl_time VALUES (7, '839:00:00', '-839:00:00', '1000:00:00', '-1000:00:00', '838:59:59.99995', '00:00:00', '-00:00:00');
INSERT INTO tl_time (id) VALUES (8);
UPDATE tl_time SET t6 = '-838:59:59.999998' WHERE id = 2;

CREATE TABLE tl_year (id INT PRIMARY KEY, y YEAR NULL, y4 YEAR(4) NOT NULL DEFAULT 2155);
INSERT INTO tl_year VALUES (1, 1901, 2155), (2, 2155, 1901), (3, 1970, 2000), (4, 69, 70), (5, '00', '99');
INSERT INTO tl_year (id) VALUES (6);
UPDATE tl_year SET y = 2024 WHERE id = 3;

CREATE TABLE tl_year0 (id INT PRIMARY KEY, y YEAR NULL);
INSERT INTO tl_year0 VALUES (1, 0), (2, '0000');
UPDATE tl_year0 SET y = 0 WHERE id = 1;

-- Zero dates and zero parts (no NO_ZERO_DATE / NO_ZERO_IN_DATE).
CREATE TABLE tl_zero (id INT PRIMARY KEY, d DATE NULL, dn DATE NOT NULL, dt DATETIME NULL, dtn DATETIME(6) NOT NULL, ts TIMESTAMP NULL, tsn TIMESTAMP(3) NOT NULL);
INSERT INTO tl_zero VALUES (1, '0000-00-00', '0000-00-00', '0000-00-00 00:00:00', '0000-00-00 00:00:00.000000', '0000-00-00 00:00:00', '0000-00-00 00:00:00.000');
INSERT INTO tl_zero VALUES (2, '2020-00-15', '2020-00-15', '2020-00-15 10:20:30', '2020-00-15 10:20:30.123456', '2020-01-01 00:00:00', '2020-01-01 00:00:00.123');
INSERT INTO tl_zero VALUES (3, '2020-02-00', '2020-02-00', '2020-02-00 10:20:30', '2020-02-00 23:59:59.999999', '2020-01-01 00:00:00', '2020-01-01 00:00:00.123');
UPDATE tl_zero SET d = '2021-02-28', dt = '2020-02-29 00:00:00' WHERE id = 1;
UPDATE tl_zero SET d = '0000-00-00', dt = '2020-00-00 00:00:00' WHERE id = 1;

-- Years 0-99 in DATE and DATETIME: MariaDB stores them as written (SELECT gives 0001-01-01); Debezium's
-- enable.time.adjuster (default true) maps years 0-69 to 2000-2069 and 70-99 to 1970-1999.
CREATE TABLE tl_year1 (id INT PRIMARY KEY, d DATE NULL, dt DATETIME(6) NULL);
INSERT INTO tl_year1 VALUES (1, '0001-01-01', '0001-01-01 00:00:00.000001'), (2, '0069-12-31', '0069-12-31 23:59:59.999999'), (3, '0070-01-01', '0070-01-01 00:00:00'), (4, '0099-12-31', '0099-12-31 12:00:00.5');
-- Year 0 with a real month and day: MariaDB stores and returns 0000-01-01; Debezium 3.5 takes any date
-- with year 0 for a zero date (NULL, or the epoch when NOT NULL).
CREATE TABLE tl_year0date (id INT PRIMARY KEY, d DATE NULL, dn DATE NOT NULL, dt DATETIME NULL, dtn DATETIME(6) NOT NULL);
INSERT INTO tl_year0date VALUES (1, '0000-01-01', '0000-12-31', '0000-01-01 00:00:00', '0000-12-31 23:59:59.999999');

-- TIMESTAMP written and read in non-UTC session zones: stored as UTC, so the events are the same instants.
CREATE TABLE tl_zone (id INT PRIMARY KEY, ts TIMESTAMP(6) NULL, ts0 TIMESTAMP NULL, dt DATETIME(6) NULL);
SET time_zone = '+05:30';
INSERT INTO tl_zone VALUES (1, '2024-03-31 02:30:00.123456', '2024-03-31 02:30:00', '2024-03-31 02:30:00.123456');
INSERT INTO tl_zone VALUES (2, '1970-01-01 05:30:01.000001', '1970-01-01 05:30:01', '1970-01-01 05:30:01.000001');
SET time_zone = '-12:59';
INSERT INTO tl_zone VALUES (3, '2038-01-18 14:15:07.999999', '2038-01-18 14:15:07', '2038-01-18 14:15:07.999999');
INSERT INTO tl_zone VALUES (4, '1969-12-31 11:01:00.5', '1969-12-31 11:01:01', '1969-12-31 11:01:00.5');
SET time_zone = '+13:00';
INSERT INTO tl_zone VALUES (5, '2024-11-03 01:30:00.000001', '2024-11-03 01:30:00', '2024-11-03 01:30:00.000001');
UPDATE tl_zone SET ts = '2024-10-27 02:30:00.5' WHERE id = 1;
SET time_zone = '+00:00';

-- Defaults: CURRENT_TIMESTAMP(fsp) with and without ON UPDATE, literal defaults at the limits.
CREATE TABLE tl_defaults (id INT PRIMARY KEY, v INT, created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), updated TIMESTAMP(3) NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3), touched DATETIME(6) NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), plain TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, d DATE NOT NULL DEFAULT '9999-12-31', t TIME(6) NOT NULL DEFAULT '-838:59:59.000000', y YEAR NOT NULL DEFAULT 1901, dtl DATETIME(3) NOT NULL DEFAULT '1000-01-01 00:00:00.001', tsl TIMESTAMP(2) NOT NULL DEFAULT '2038-01-19 03:14:07.99', z DATETIME NOT NULL DEFAULT '0000-00-00 00:00:00');
-- The ADD COLUMN comes before the rows: MariaDB fills a new column's default into existing rows without
-- row events (TYPES.md, a column added with DEFAULT x), which is not what this file is about.
ALTER TABLE tl_defaults ADD COLUMN added TIMESTAMP(6) NULL DEFAULT '1970-01-01 00:00:00.999999';
INSERT INTO tl_defaults (id, v) VALUES (1, 1), (2, 2);
UPDATE tl_defaults SET v = 3 WHERE id = 1;
INSERT INTO tl_defaults (id, v) VALUES (3, 3);
CREATE TABLE tl_defaults0 (id INT PRIMARY KEY, z0 TIMESTAMP(3) NOT NULL DEFAULT '0000-00-00 00:00:00.000', z1 TIMESTAMP NULL DEFAULT '0000-00-00 00:00:00', z2 DATE NULL DEFAULT '0000-00-00', z3 DATETIME(6) NOT NULL DEFAULT '2020-00-00 00:00:00');
INSERT INTO tl_defaults0 (id) VALUES (1);
