-- The key of tables without a primary key when both connectors read the table from SHOW CREATE TABLE
-- (the schema snapshot, as after a restart without history): MariaDB writes a column's UNIQUE as a
-- UNIQUE KEY constraint, and lists unique keys of NOT NULL columns before the others, so a nullable
-- column declared UNIQUE, which keys the table when the CREATE TABLE is streamed, keys nothing here,
-- and of two unique keys the NOT NULL one comes first whatever the declaration order.
-- capture-env: CAPTURE_SNAPSHOT_MODE=no_data
-- before-start
CREATE TABLE ks_col_uniq_null (id INT NOT NULL, u INT NULL UNIQUE);
CREATE TABLE ks_uniq_nn (id INT NOT NULL, u VARCHAR(10) NOT NULL, UNIQUE KEY uk_u (u));
CREATE TABLE ks_order (a INT NULL, b INT NOT NULL, c INT NOT NULL, UNIQUE KEY ua (a), UNIQUE KEY uc (c), UNIQUE KEY ub (b));
CREATE TABLE ks_composite (a INT NOT NULL, b VARCHAR(5) NOT NULL, v INT, UNIQUE KEY (b, a));
CREATE TABLE ks_serial (id SERIAL, v INT);
CREATE TABLE ks_keyless (a INT, b INT, KEY (a));
-- after-start
INSERT INTO ks_col_uniq_null VALUES (1, NULL), (2, 5);
INSERT INTO ks_uniq_nn VALUES (1, 'a'), (2, 'b');
UPDATE ks_uniq_nn SET u = 'c' WHERE id = 2;
INSERT INTO ks_order VALUES (NULL, 1, 2);
INSERT INTO ks_composite VALUES (1, 'x', 1);
DELETE FROM ks_composite;
INSERT INTO ks_serial (v) VALUES (1);
INSERT INTO ks_keyless VALUES (1, 1);
ALTER TABLE ks_keyless ADD UNIQUE KEY (b);
INSERT INTO ks_keyless VALUES (2, 2);
ALTER TABLE ks_keyless MODIFY b INT NOT NULL;
ALTER TABLE ks_keyless ADD UNIQUE KEY ub2 (b);
INSERT INTO ks_keyless VALUES (3, 3);
