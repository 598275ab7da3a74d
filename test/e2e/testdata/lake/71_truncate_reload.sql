-- Truncate and reload, the ETL idiom (issue 29): a table bulk-loaded in two multi-row INSERTs, emptied
-- with TRUNCATE and loaded again. Debezium, and capture after it, give the TRUNCATE source.row = the
-- last row index of the previous rows event (about 900 narrow rows fit in one); ingest must order the
-- truncate at its own event, or the reload sorts below it and is dropped. A keyless table beside it
-- goes through the same idiom as a change log. Read by TestLakeRealWorld only (TestLakeTruncateReload
-- is the same idiom on its own).
CREATE TABLE tr_keyed (id INT NOT NULL PRIMARY KEY, v INT);
CREATE TABLE tr_log (a INT, v INT);
INSERT INTO tr_log SELECT seq % 7, seq FROM seq_1_to_1800;
INSERT INTO tr_log SELECT seq % 7, seq FROM seq_1801_to_3600;
TRUNCATE TABLE tr_log;
INSERT INTO tr_log VALUES (1, -1), (1, -1), (2, NULL);
INSERT INTO tr_keyed SELECT seq, seq * 10 FROM seq_1_to_1800;
INSERT INTO tr_keyed SELECT seq, seq * 10 FROM seq_1801_to_3600;
TRUNCATE TABLE tr_keyed;
INSERT INTO tr_keyed VALUES (1, -1), (2, -2), (3, -3), (4, -4);
UPDATE tr_keyed SET v = 0 WHERE id = 4;
