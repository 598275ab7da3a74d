-- Table renames mid-stream, as applications and migration tools write them: RENAME TABLE, a swap in one
-- statement (the blue/green idiom of pt-online-schema-change and gh-ost), ALTER TABLE … RENAME alone and
-- combined with other clauses, and changes before and after each. The schema-change events (topic <prefix>)
-- and the row events under the new names must equal Debezium's.
CREATE TABLE rn_a (id INT NOT NULL PRIMARY KEY, v VARCHAR(20));
CREATE TABLE rn_live (id INT NOT NULL PRIMARY KEY, v VARCHAR(20));
CREATE TABLE rn_shadow (id INT NOT NULL PRIMARY KEY, v VARCHAR(20), extra INT);
CREATE TABLE rn_x (id INT NOT NULL PRIMARY KEY, v VARCHAR(20));
CREATE TABLE rn_y (id INT NOT NULL PRIMARY KEY, v VARCHAR(20));
INSERT INTO rn_a VALUES (1, 'a1'), (2, 'a2');
INSERT INTO rn_live VALUES (1, 'live1'), (2, 'live2');
INSERT INTO rn_shadow VALUES (1, 'shadow1', 10);
INSERT INTO rn_x VALUES (1, 'x1');
INSERT INTO rn_y VALUES (1, 'y1');
UPDATE rn_a SET v = 'a1+' WHERE id = 1;
RENAME TABLE rn_a TO rn_b;
INSERT INTO rn_b VALUES (3, 'b3');
UPDATE rn_b SET v = 'b2' WHERE id = 2;
DELETE FROM rn_b WHERE id = 1;
RENAME TABLE rn_live TO rn_old, rn_shadow TO rn_live;
INSERT INTO rn_live VALUES (2, 'new2', 20);
UPDATE rn_old SET v = 'old1' WHERE id = 1;
ALTER TABLE rn_x RENAME TO rn_x2;
INSERT INTO rn_x2 VALUES (2, 'x2');
ALTER TABLE rn_y ADD COLUMN z INT NULL, RENAME AS rn_y2;
INSERT INTO rn_y2 VALUES (2, 'y2', 5);
UPDATE rn_y2 SET z = 1 WHERE id = 1;
RENAME TABLE rn_b TO rn_c;
INSERT INTO rn_c VALUES (4, 'c4');
