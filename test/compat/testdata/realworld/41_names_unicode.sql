-- Names outside Avro's alphabet, as schemas written elsewhere have them: spaces, dashes, dots, `$`,
-- non-ASCII letters and symbols, leading digits, reserved words, mixed case and 64-character names, in
-- table names (topics and record names) and column names (key and row fields), with Debezium's
-- avro_unicode adjustment of schema and field names. A later ALTER adds another such column;
-- `a b`, `a_b` and `a-b` collide under avro but not under avro_unicode.
-- ingest-env: INGEST_BACKFILL_DEFAULTS=true
-- debezium: field.name.adjustment.mode=avro_unicode
-- debezium: schema.name.adjustment.mode=avro_unicode
-- capture-env: CAPTURE_FIELD_NAME_ADJUSTMENT_MODE=avro_unicode
-- capture-env: CAPTURE_SCHEMA_NAME_ADJUSTMENT_MODE=avro_unicode
-- allow: 2024-sales keyschema.namespace Debezium keeps a record-name part that starts with a digit (P.db.2024_u002dsales), which Avro 1.12's parser and the registry's Confluent API reject; capture escapes the digit (_u0032024_u002dsales) so the schema can be registered and read back
-- allow: 2024-sales keyschema.connect.name Debezium keeps a record-name part that starts with a digit (P.db.2024_u002dsales), which Avro 1.12's parser and the registry's Confluent API reject; capture escapes the digit (_u0032024_u002dsales) so the schema can be registered and read back
-- allow: 2024-sales valueschema.namespace Debezium keeps a record-name part that starts with a digit (P.db.2024_u002dsales), which Avro 1.12's parser and the registry's Confluent API reject; capture escapes the digit (_u0032024_u002dsales) so the schema can be registered and read back
-- allow: 2024-sales valueschema.connect.name Debezium keeps a record-name part that starts with a digit (P.db.2024_u002dsales), which Avro 1.12's parser and the registry's Confluent API reject; capture escapes the digit (_u0032024_u002dsales) so the schema can be registered and read back
-- allow: 2024-sales valueschema.fields[0].type[1].connect.name Debezium keeps a record-name part that starts with a digit (P.db.2024_u002dsales), which Avro 1.12's parser and the registry's Confluent API reject; capture escapes the digit (_u0032024_u002dsales) so the schema can be registered and read back
CREATE TABLE `order items` (`order id` INT NOT NULL PRIMARY KEY, `created at` DATETIME(3), `Amount€` DECIMAL(10,2), `unit-price` INT, `ship.to` VARCHAR(40), `$cost` INT, `naïve` VARCHAR(10), `1st_place` INT, `select` INT, `order` INT, `key` INT, `MixedCase` INT, `a column name that is exactly sixty-four characters long, see!!!` INT);
INSERT INTO `order items` VALUES (1, '2024-05-01 10:00:00.123', 12.50, 3, 'Berlin', 7, 'oui', 1, 2, 3, 4, 5, 6), (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
UPDATE `order items` SET `Amount€` = 99.99, `select` = 20 WHERE `order id` = 1;
UPDATE `order items` SET `order id` = 3 WHERE `order id` = 2;
DELETE FROM `order items` WHERE `order id` = 1;
CREATE TABLE `2024-sales` (`key` INT NOT NULL PRIMARY KEY, `Qty Sold` INT, `Région` VARCHAR(20));
INSERT INTO `2024-sales` VALUES (1, 10, 'Île-de-France');
CREATE TABLE `Café` (`Größe` INT NOT NULL PRIMARY KEY, `Prix $` DECIMAL(6,2), `日本語` VARCHAR(10));
INSERT INTO `Café` VALUES (1, 2.50, 'はい');
CREATE TABLE `my.table` (id INT NOT NULL PRIMARY KEY, `x-y` INT);
INSERT INTO `my.table` VALUES (1, 2);
CREATE TABLE `MixedCase Table` (ID INT NOT NULL PRIMARY KEY, `Value` INT, `value2` INT);
INSERT INTO `MixedCase Table` VALUES (1, 1, 1);
ALTER TABLE `order items` ADD COLUMN `late col-1` VARCHAR(5) DEFAULT 'd';
INSERT INTO `order items` (`order id`, `late col-1`) VALUES (4, 'z');
CREATE TABLE pairs (id INT NOT NULL PRIMARY KEY, `a b` INT, `a_b` INT, `a-b` INT);
INSERT INTO pairs VALUES (1, 1, 2, 3);
