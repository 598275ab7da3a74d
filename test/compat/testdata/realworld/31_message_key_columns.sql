-- Debezium's message.key.columns: regexes over db.table, columns in the order written; a table it
-- names keeps its primary key when none of the columns exists; tables it does not name are keyed as
-- usual. Key changes (delete, tombstone, create) follow the custom key.
-- (The patterns use [.] rather than \. because Kafka Connect reads the connector properties as a Java
-- .properties file, where a backslash is an escape character.)
-- debezium: message.key.columns=.*[.]mk_orders:region,code;.*[.]mk_keyless:b;.*[.]MK_UNIQ:v;.*[.]mk_nomatch:nosuch
-- capture-env: CAPTURE_MESSAGE_KEY_COLUMNS=.*[.]mk_orders:region,code;.*[.]mk_keyless:b;.*[.]MK_UNIQ:v;.*[.]mk_nomatch:nosuch
CREATE TABLE mk_orders (id INT NOT NULL PRIMARY KEY, code VARCHAR(8) NOT NULL, region CHAR(2) NOT NULL, v INT);
CREATE TABLE mk_keyless (a INT, b VARCHAR(5));
CREATE TABLE mk_uniq (u INT NOT NULL UNIQUE, v INT);
CREATE TABLE mk_other (id INT NOT NULL PRIMARY KEY, v INT);
CREATE TABLE mk_nomatch (id INT NOT NULL PRIMARY KEY, v INT);
INSERT INTO mk_orders VALUES (1, 'A1', 'eu', 10), (2, 'B2', 'us', 20);
UPDATE mk_orders SET v = 11 WHERE id = 1;
UPDATE mk_orders SET code = 'A9' WHERE id = 1;
UPDATE mk_orders SET id = 3 WHERE id = 2;
DELETE FROM mk_orders WHERE id = 3;
INSERT INTO mk_keyless VALUES (1, 'x'), (2, NULL);
UPDATE mk_keyless SET b = 'y' WHERE a = 1;
DELETE FROM mk_keyless WHERE a = 2;
INSERT INTO mk_uniq VALUES (1, 100), (2, 200);
UPDATE mk_uniq SET v = 101 WHERE u = 1;
DELETE FROM mk_uniq WHERE u = 2;
INSERT INTO mk_other VALUES (1, 1);
UPDATE mk_other SET v = 2 WHERE id = 1;
INSERT INTO mk_nomatch VALUES (1, 1);
DELETE FROM mk_nomatch WHERE id = 1;
