-- TIMESTAMP across DST changes on a server whose system zone is Europe/Berlin (time_zone=SYSTEM) with the
-- zone tables loaded. TestCompatTemporalZones runs it on a private server (the shared one is UTC and has no
-- named zones), in the format of realworld/README.md. The same rows go into z_snap before both connectors
-- start (snapshot, op r) and into z_stream after (binlog, op c); the test checks that capture's two agree
-- with each other and with the server's own SELECT in UTC.
--   Europe/Berlin: 2024-03-31 02:00 CET → 03:00 CEST (02:xx does not exist); 2024-10-27 03:00 CEST → 02:00
--   CET (02:xx happens twice). America/New_York: 2024-03-10 02:00 → 03:00; 2024-11-03 02:00 → 01:00.
-- debezium: snapshot.mode=initial
-- allow: z_snap value.source.ts_ms a snapshot row is stamped with the time each connector read it
-- allow: z_snap value.source.ts_us a snapshot row is stamped with the time each connector read it
-- allow: z_snap value.source.ts_ns a snapshot row is stamped with the time each connector read it
-- allow: z_snap value.source.pos each connector's snapshot is at the binlog position where it started
-- allow: z_snap value.after.ts Debezium 3.5's snapshot (JDBC) drops trailing fraction zeros (2024-03-31T01:00:00.5Z) and reads the zero TIMESTAMP as NULL, while its binlog reader gives fsp digits and the epoch; capture gives what Debezium's binlog reader gives on both paths, checked against MariaDB's UNIX_TIMESTAMP by the test
-- allow: z_snap value.after.ts0 Debezium 3.5's snapshot (JDBC) reads the zero TIMESTAMP (UNIX_TIMESTAMP 0, not NULL) as NULL, while its binlog reader gives 1970-01-01T00:00:00Z; capture gives the epoch on both paths
-- allow: z_def valueschema.fields[0].type[1].fields[2].default Debezium 3.5 reads a TIMESTAMP default literal written in a Berlin session as UTC (2024-10-27T02:30:00.000Z); rows that take the default get 01:30Z from MariaDB (the test checks capture's default against the row)
-- allow: z_def valueschema.fields[0].type[1].fields[2].type.connect.default Debezium 3.5 reads a TIMESTAMP default literal written in a Berlin session as UTC; rows that take the default get the instant MariaDB stored, which is capture's default
-- before-start
CREATE TABLE z_snap (id INT PRIMARY KEY, ts TIMESTAMP(6) NULL, ts0 TIMESTAMP NULL, dt DATETIME(6) NULL);
-- Non-strict: a local time in the skipped hour is moved to the end of the gap (with a warning), and the
-- zero TIMESTAMP can be written.
SET sql_mode = '';
SET time_zone = 'SYSTEM';
INSERT INTO z_snap VALUES (1, '2024-03-31 01:59:59.999999', '2024-03-31 01:59:59', '2024-03-31 01:59:59.999999');
INSERT INTO z_snap VALUES (2, '2024-03-31 02:30:00.5', '2024-03-31 02:30:00', '2024-03-31 02:30:00.5');
INSERT INTO z_snap VALUES (3, '2024-03-31 03:00:00', '2024-03-31 03:00:00', '2024-03-31 03:00:00');
INSERT INTO z_snap VALUES (4, '2024-10-27 02:30:00.25', '2024-10-27 02:30:00', '2024-10-27 02:30:00.25');
INSERT INTO z_snap VALUES (5, '2024-10-27 03:00:00', '2024-10-27 03:00:00', '2024-10-27 03:00:00');
INSERT INTO z_snap VALUES (6, '1970-01-01 01:00:00.999999', '1970-01-01 01:00:01', '1970-01-01 01:00:00.999999');
INSERT INTO z_snap VALUES (7, '2038-01-19 04:14:07.999999', '2038-01-19 04:14:07', '2038-01-19 04:14:07.999999');
SET time_zone = 'America/New_York';
INSERT INTO z_snap VALUES (8, '2024-03-10 02:30:00', '2024-03-10 02:30:00', '2024-03-10 02:30:00');
INSERT INTO z_snap VALUES (9, '2024-11-03 01:30:00.75', '2024-11-03 01:30:00', '2024-11-03 01:30:00.75');
SET time_zone = '+00:00';
INSERT INTO z_snap VALUES (10, '2024-10-27 00:30:00.000001', '2024-10-27 00:30:00', '2024-10-27 00:30:00.000001');
INSERT INTO z_snap VALUES (11, '2024-10-27 01:30:00.000001', '2024-10-27 01:30:00', '2024-10-27 01:30:00.000001');
INSERT INTO z_snap VALUES (12, '2024-11-03 05:30:00', '2024-11-03 05:30:00', '2024-11-03 05:30:00');
INSERT INTO z_snap VALUES (13, '2024-11-03 06:30:00', '2024-11-03 06:30:00', '2024-11-03 06:30:00');
INSERT INTO z_snap VALUES (14, '0000-00-00 00:00:00', '1970-01-01 00:00:00.5', '0000-00-00 00:00:00');
-- after-start
CREATE TABLE z_stream (id INT PRIMARY KEY, ts TIMESTAMP(6) NULL, ts0 TIMESTAMP NULL, dt DATETIME(6) NULL);
SET sql_mode = '';
SET time_zone = 'SYSTEM';
INSERT INTO z_stream VALUES (1, '2024-03-31 01:59:59.999999', '2024-03-31 01:59:59', '2024-03-31 01:59:59.999999');
INSERT INTO z_stream VALUES (2, '2024-03-31 02:30:00.5', '2024-03-31 02:30:00', '2024-03-31 02:30:00.5');
INSERT INTO z_stream VALUES (3, '2024-03-31 03:00:00', '2024-03-31 03:00:00', '2024-03-31 03:00:00');
INSERT INTO z_stream VALUES (4, '2024-10-27 02:30:00.25', '2024-10-27 02:30:00', '2024-10-27 02:30:00.25');
INSERT INTO z_stream VALUES (5, '2024-10-27 03:00:00', '2024-10-27 03:00:00', '2024-10-27 03:00:00');
INSERT INTO z_stream VALUES (6, '1970-01-01 01:00:00.999999', '1970-01-01 01:00:01', '1970-01-01 01:00:00.999999');
INSERT INTO z_stream VALUES (7, '2038-01-19 04:14:07.999999', '2038-01-19 04:14:07', '2038-01-19 04:14:07.999999');
SET time_zone = 'America/New_York';
INSERT INTO z_stream VALUES (8, '2024-03-10 02:30:00', '2024-03-10 02:30:00', '2024-03-10 02:30:00');
INSERT INTO z_stream VALUES (9, '2024-11-03 01:30:00.75', '2024-11-03 01:30:00', '2024-11-03 01:30:00.75');
SET time_zone = '+00:00';
INSERT INTO z_stream VALUES (10, '2024-10-27 00:30:00.000001', '2024-10-27 00:30:00', '2024-10-27 00:30:00.000001');
INSERT INTO z_stream VALUES (11, '2024-10-27 01:30:00.000001', '2024-10-27 01:30:00', '2024-10-27 01:30:00.000001');
INSERT INTO z_stream VALUES (12, '2024-11-03 05:30:00', '2024-11-03 05:30:00', '2024-11-03 05:30:00');
INSERT INTO z_stream VALUES (13, '2024-11-03 06:30:00', '2024-11-03 06:30:00', '2024-11-03 06:30:00');
INSERT INTO z_stream VALUES (14, '0000-00-00 00:00:00', '1970-01-01 00:00:00.5', '0000-00-00 00:00:00');
SET time_zone = 'SYSTEM';
-- Defaults written in the Berlin zone, one in the repeated hour, and the ON UPDATE column.
CREATE TABLE z_def (id INT PRIMARY KEY, v INT, ts TIMESTAMP(3) NOT NULL DEFAULT '2024-10-27 02:30:00.000', up TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), dt DATETIME NOT NULL DEFAULT '2024-03-31 02:30:00');
INSERT INTO z_def (id, v) VALUES (1, 1);
UPDATE z_def SET v = 2 WHERE id = 1;
