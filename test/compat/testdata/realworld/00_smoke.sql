-- The harness itself: a utf8mb4 table with a non-ASCII key, an update and a delete.
CREATE TABLE rw_smoke (k VARCHAR(20) NOT NULL PRIMARY KEY, v INT) DEFAULT CHARSET=utf8mb4;
INSERT INTO rw_smoke VALUES ('naïve', 1), ('日本', 2);
UPDATE rw_smoke SET v = 3 WHERE k = 'naïve';
DELETE FROM rw_smoke WHERE k = '日本';
